"""A Kùzu read by key names its keyed node last in the pattern.

Kùzu 0.11 plans a pattern by its statistics: on a store of a million memories without links,
``MATCH (a:Memory {id: $key})-[:NEXT]->(b:Memory)`` was a hash join built from a scan of every
``Memory`` row, 85-140 ms a key (a one-shot recall's graph expansion asked 30 of them: 2 s of a
cold recall); ``MATCH (b:Memory)<-[:NEXT]-(a:Memory {id: $key})`` starts from the key's row,
0.7-4 ms; with links stored, 14-17 against 5-8 ms. The plans of a small store do not show it
(both forms read a few rows there), so the rule is read from the statements themselves.
"""

from __future__ import annotations

import re
from pathlib import Path

import graphmem.adapters

ADAPTERS = Path(graphmem.adapters.__file__).parent
# A node matched by its primary key (``{id: $key}``, ``{{key: $k}}`` in an f-string) ...
KEYED = r"\(\w*:[\w{}]+ \{\{?(?:id|key): \$\w+\}?\}\)"
# ... with an edge after it, to the node the edge ends at.
KEYED_FIRST = re.compile(KEYED + r"\s*<?-\[[^\]]*\]->?\s*(\([^)]*\))")


def keyed_first(source: str) -> list[str]:
    """The patterns of ``source`` whose keyed node comes before an unkeyed one."""
    return [
        match.group(0)
        for match in KEYED_FIRST.finditer(source)
        if not re.search(r"\{\{?(?:id|key): \$", match.group(1))  # both ends keyed: either way
    ]


def test_the_rule_finds_a_keyed_node_written_first() -> None:
    assert keyed_first('"MATCH (a:Memory {id: $key})-[:NEXT]->(b:Memory) RETURN a.id"')
    assert keyed_first('f"MATCH (a:{label} {{key: $k}})-[x:ABOUT|NEXT]-(b) RETURN b.key"')
    assert not keyed_first('"MATCH (b:Memory)<-[:NEXT]-(a:Memory {id: $key}) RETURN a.id"')
    assert not keyed_first('"MATCH (a:Memory {id: $s})-[x:RELATES]->(b:Memory {id: $t}) DELETE x"')


def test_every_kuzu_read_by_key_names_the_keyed_node_last() -> None:
    found = {
        path.name: patterns
        for path in sorted(ADAPTERS.glob("kuzu*.py"))
        if (patterns := keyed_first(path.read_text("utf-8")))
    }

    assert not found, f"write the keyed node last, as in (b:Memory)<-[:NEXT]-(a:Memory {{id: $key}}): {found}"
