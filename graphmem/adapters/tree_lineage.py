"""Where tree-sitter nodes sit in their tree, for ``code_parser.py``: ancestors and siblings
in time linear in the file.

Tree-sitter finds a node's parent by walking down from the root again (``Node.parent``), and a
sibling by walking its parent's children from the first (``prev_named_sibling``,
``next_named_sibling``): each costs the node's depth plus its rank among its siblings. Asked
for each definition of a file, that was quadratic: 4,000 functions assigned in nested calls
took 4.4 s (100 KB), and a function under 100,000 comment lines 70 s (500 KB).

A :class:`Lineage` is asked about nodes in source order (ancestors before what they hold) and
keeps the path from the root to the last one, each level's children read once, so that
every node of the tree is read at most once over all the questions.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node


class Level:
    """One node of a path from the root, and which of its children the path goes on through."""

    __slots__ = ("_children", "_starts", "at", "node")

    def __init__(self, node: Node) -> None:
        self.node = node
        self.at = -1  # the index, in ``children``, of the next node of the path
        self._children: list[Node] | None = None  # read at the first descent through it
        self._starts: list[int] = []

    @property
    def children(self) -> list[Node]:
        if self._children is None:
            self._children = self.node.children
            self._starts = [child.start_byte for child in self._children]
        return self._children

    def holding(self, start: int, end: int) -> int | None:
        """The index of the child whose range holds ``start``-``end`` (at least one byte)."""
        children = self.children
        at = bisect_right(self._starts, start) - 1
        while at > 0 and children[at].start_byte == children[at].end_byte:
            at -= 1  # an empty node (a MISSING one) holds nothing
        if at >= 0 and children[at].start_byte <= start and end <= children[at].end_byte:
            return at
        return None

    def before(self) -> Iterator[Node]:
        """The named children before the one the path goes through, the nearest first."""
        children = self.children
        return (children[i] for i in range(self.at - 1, -1, -1) if children[i].is_named)

    def after(self) -> Iterator[Node]:
        """The named children after the one the path goes through, the nearest first."""
        children = self.children
        return (children[i] for i in range(self.at + 1, len(children)) if children[i].is_named)


class Lineage:
    """The paths from ``root`` to the nodes :meth:`visit` is given, in source order."""

    def __init__(self, root: Node) -> None:
        self._path = [Level(root)]

    def visit(self, node: Node) -> list[Level] | None:
        """The path from the root to ``node`` (a node of at least one byte), ``node``'s level
        last; None when ``node`` is not in this tree. The list changes at the next visit.

        Nodes visited in order of start, the outermost first, cost the nodes between them;
        any other order is answered too, only slower."""
        start, end = node.start_byte, node.end_byte
        path = self._path
        below = True  # whether ``node`` may be under the last level of the path
        while True:
            top = path[-1]
            if top.node == node:
                return path
            held = top.node.start_byte <= start and end <= top.node.end_byte
            if below and held:
                at = top.holding(start, end)
                if at is not None:
                    top.at = at
                    path.append(Level(top.children[at]))
                    continue
                # None of its children holds it: ``node`` has the same range as this one and
                # is one of its ancestors (nodes of one range nest), found on the way back up.
                below = False
            if len(path) == 1:
                return None
            path.pop()
