"""What a GitLab answer means for the graph, decided once: a ``GitLabEdit`` of primitive facts.

The enricher asks GitLab about one MR, issue or epic and gets a ``GitLabAnswer``;
``edit_for`` turns it into the writes every GitLab graph (``core.gitlab_ports.GitLabGraph.apply``:
Kùzu, PostgreSQL, the fake) applies as they are: GitLab's facts on the node, the edges
the answer replaces, the people, the nodes it names (queued when near enough, else only
linked; in the local project when GitLab's project is the checkout's), and the edges.
Pure data; no I/O.

Who owns what an answer writes is decided here too (``owner_after``, ``writes_on``), for every
store that keeps owners (a team's PostgreSQL store, docs/team.md; Kùzu and the fake hold one
person's graph, where everything is theirs): a node an answer finds is owned like the node it
was asked about, so what Bob's private issue leads to (its epic, its people, the MRs closing it)
is Bob's, not the team's; the team's answer makes the team's what only answers found, and no
answer changes or publishes what a person's own memory or request put in the store. A person's
daemon writes only on what it owns (``writes_on``: the team's rows and its person's own; the
store saves the asked node's facts and marks its attempts on those alone, and fetches only them):
Alice's token never decides what Bob's private issue holds, even one she is shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from graphmem.core import keys
from graphmem.core.enrichment import MAX_HOPS, EnrichState, GitLabTarget, parse_key
from graphmem.core.gitlab import EpicData, IssueData, IssueRefData, MergeRequestData, Person
from graphmem.core.models import EntityKind

GitLabData = MergeRequestData | IssueData | EpicData
# The edges from people to what they wrote, were assigned or review.
PEOPLE_RELS = ("AUTHORED", "ASSIGNED", "REVIEWS")
# The kinds whose row holds only what any answer naming it says too, whoever stored it first
# (``Held.found``): a GitLab person (its name and title are GitLab's once stored) and a file (its
# row is its path, which is its key: a memory naming it says no more than an MR changing it).
ANSWERED_KINDS = frozenset({EntityKind.PERSON, EntityKind.FILE})


@dataclass(frozen=True, slots=True)
class GitLabAnswer:
    """What GitLab said of one MR, issue or epic, and what the enricher knows around it.

    ``local`` is (GitLab project path, local root) when the entity's project is the one
    checked out here; ``file_keys`` are (File key, path) of an MR's changed files
    (``changed_file_keys``), ``symbol_keys`` the symbols its hunks meet.
    """

    key: str
    data: GitLabData
    hops: int
    fetched_at: datetime
    next_attempt: datetime
    local: tuple[str, str] | None = None
    file_keys: Sequence[tuple[str, str]] = ()
    symbol_keys: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class SavedFacts:
    """GitLab's facts of the asked node: its title and ``data`` replace what it had, its
    queue state becomes ``ok`` (no error, no attempts) with these times."""

    key: str
    kind: EntityKind
    data: GitLabData
    fetched_at: datetime
    next_attempt: datetime


@dataclass(frozen=True, slots=True)
class NewNode:
    """A node the answer names (an MR, issue or epic, or a changed file).

    Absent: created with these facts (``queue`` None: no queue state, a file), owned as
    ``owner_after`` says. Present: it keeps what it has, but an empty title takes ``title``,
    and a ``linked`` one becomes ``pending`` when ``queue`` is pending (when ``writes_on`` it).
    """

    key: str
    kind: EntityKind
    name: str
    project: str | None
    title: str = ""
    state: str = ""  # GitLab's state as the naming answer gave it
    queue: EnrichState | None = None
    hops: int = 0


@dataclass(frozen=True, slots=True)
class EdgeScope:
    """Every ``rel`` edge from ``key`` (into ``key`` when ``into``), whatever the other end."""

    rel: str
    key: str
    into: bool = False


@dataclass(frozen=True, slots=True)
class Edge:
    """``source -[rel]-> target``, added when both ends exist (once, however often named)."""

    rel: str
    source: str
    target: str


@dataclass(frozen=True, slots=True)
class GitLabEdit:
    """The writes of one answer, applied in this order in one step: ``facts`` (nothing at all
    when its node is not in the graph, or another person's private row), ``drop`` the edges in these
    scopes, upsert ``people`` (name and web_url replaced), create ``nodes``, add ``edges`` (each
    lies in a dropped scope). People and nodes are owned, and written on, as ``owner_after``
    and ``writes_on`` say; an edge is added whoever's its ends are."""

    facts: SavedFacts
    drop: tuple[EdgeScope, ...]
    people: tuple[Person, ...]
    nodes: tuple[NewNode, ...]
    edges: tuple[Edge, ...]


@dataclass(frozen=True, slots=True)
class Held:
    """A node or person an answer names, as a store that keeps owners holds it.

    ``owner``: the person it is private to (None: the team's). ``found``: nothing in it is of a
    person's own: an MR, issue or epic an answer created (queued through another node,
    ``NewNode.hops`` > 0), or one of ``ANSWERED_KINDS`` (a GitLab person, a file); not an MR,
    issue or epic a person's memory or ``enrich`` request put there (its name, project and
    GitLab's answer fetched with their token are of them). ``own``: it is the writer's own
    (``owner`` is the writer).
    """

    owner: str | None
    found: bool
    own: bool


def owner_after(asked: str | None, held: Held | None) -> str | None:
    """Who owns a node or person an answer names once the answer is stored (None: the team);
    ``asked`` owns the node the answer is about, ``held`` is the named one as stored (None: absent).

    - Absent: it was found through the asked node, and is owned like it: an epic, a person or
      an MR first known through Bob's private issue is Bob's.
    - The team's answer makes the team's what it names and only answers ``found`` (Bob's
      daemon found the epic first; the team's issue is part of it too; the team's MR changes a
      file Bob's private MR changed first).
    - Anything else keeps its owner: a private answer publishes nothing, and what a person's
      own memory or request named stays theirs until a memory the team sees names it (the
      team's MR closing Bob's issue keeps the issue Bob's; the edge is stored).
    """
    if held is None:
        return asked
    if asked is None and held.found:
        return None
    return held.owner


def writes_on(held: Held | None, owner: str | None) -> bool:
    """Whether an answer writes on a node or person it names (its title, queue state, a person's
    name), ``owner`` being ``owner_after``'s: on one it creates, the team's (or one it makes the
    team's) and the writer's own; never on another person's private one, even one the writer is
    shown through a memory of their own (only the edge to it is stored: what GitLab tells one
    person's token never changes another's row)."""
    return held is None or owner is None or held.own


def edit_for(answer: GitLabAnswer) -> GitLabEdit:
    """The writes that store ``answer``: its facts, and its edges replaced."""
    data, key = answer.data, answer.key
    facts = SavedFacts(key, _kind(data), data, answer.fetched_at, answer.next_attempt)
    plan = _Plan(key, answer.hops + 1)
    if isinstance(data, MergeRequestData):
        plan.people(data.author, data.assignees, data.reviewers)
        plan.drop("CHANGES", "CLOSES")
        local = answer.local
        project = local[1] if local is not None and local[0] == data.project else None
        for file_key, path in answer.file_keys:
            plan.node(NewNode(file_key, EntityKind.FILE, path, project))
            plan.edge("CHANGES", key, file_key)
        for symbol in answer.symbol_keys:
            if symbol.startswith(f"{EntityKind.SYMBOL.value}:"):
                plan.edge("CHANGES", key, symbol)
        for issue in plan.refs(data.closes, local):
            plan.edge("CLOSES", key, issue)
    elif isinstance(data, IssueData):
        plan.people(data.author, data.assignees, None)
        plan.drop("PART_OF", "RELATED_MR")
        for epic in plan.targets(EntityKind.EPIC, [data.epic] if data.epic else [], None):
            plan.edge("PART_OF", key, epic)
        for mr in plan.targets(EntityKind.MERGE_REQUEST, data.related_merge_requests, answer.local):
            plan.edge("RELATED_MR", key, mr)
    else:
        plan.drop("PART_OF")
        plan.scopes.append(EdgeScope("PART_OF", key, into=True))
        for parent in plan.targets(EntityKind.EPIC, [data.parent] if data.parent else [], None):
            plan.edge("PART_OF", key, parent)
        for child in [
            *plan.refs(data.child_issues, None),
            *plan.targets(EntityKind.EPIC, data.child_epics, None),
        ]:
            plan.edge("PART_OF", child, key)
    return GitLabEdit(
        facts, tuple(plan.scopes), tuple(plan.persons.values()), tuple(plan.nodes.values()), tuple(plan.edges)
    )


def changed_file_keys(data: MergeRequestData, local: tuple[str, str] | None) -> list[tuple[str, str]]:
    """(File key, path) of an MR's changed files: in the local checkout when its project is
    the local one, else under GitLab's project path."""
    project = local[1] if local is not None else data.project
    return [(keys.file_key(project, changed.new_path), changed.new_path) for changed in data.changed_files]


class _Plan:
    """The edit being written for the answer about ``key``; named entities are ``hops`` away."""

    def __init__(self, key: str, hops: int) -> None:
        self.key, self.hops = key, hops
        self.scopes: list[EdgeScope] = []
        self.persons: dict[str, Person] = {}
        self.nodes: dict[str, NewNode] = {}  # by key: the first naming wins
        self.edges: dict[Edge, None] = {}

    def drop(self, *rels: str) -> None:
        self.scopes += [EdgeScope(rel, self.key) for rel in rels]

    def node(self, node: NewNode) -> None:
        self.nodes.setdefault(node.key, node)

    def edge(self, rel: str, source: str, target: str) -> None:
        self.edges[Edge(rel, source, target)] = None

    def people(
        self, author: Person | None, assignees: Sequence[Person], reviewers: Sequence[Person] | None
    ) -> None:
        """People replace people: an issue has no reviewers, an epic no people edges at all."""
        groups = {"AUTHORED": [author] if author else [], "ASSIGNED": assignees, "REVIEWS": reviewers}
        for rel, group in groups.items():
            if group is None:
                continue
            self.scopes.append(EdgeScope(rel, self.key, into=True))
            for person in group:
                if person.username:
                    self.persons.setdefault(person.username, person)
                    self.edge(rel, keys.person_key(username=person.username), self.key)

    def refs(self, refs: Sequence[IssueRefData], local: tuple[str, str] | None) -> list[str]:
        """Issues named with their titles and states (closing issues, an epic's children)."""
        found = [(GitLabTarget(EntityKind.ISSUE, r.project, r.iid), r.title, r.state) for r in refs]
        return self._named(found, local)

    def targets(
        self, kind: EntityKind, targets: Sequence[tuple[str, int]], local: tuple[str, str] | None
    ) -> list[str]:
        """MRs, issues or epics named by (project or group path, iid)."""
        return self._named([(GitLabTarget(kind, path, iid), "", "") for path, iid in targets], local)

    def _named(
        self, found: Sequence[tuple[GitLabTarget, str, str]], local: tuple[str, str] | None
    ) -> list[str]:
        queue = EnrichState.PENDING if self.hops <= MAX_HOPS else EnrichState.LINKED
        for target, title, state in found:
            project = _project_of(target.key, local)
            self.node(NewNode(target.key, target.kind, target.name, project, title, state, queue, self.hops))
        return [target.key for target, _, _ in found]


def _kind(data: GitLabData) -> EntityKind:
    if isinstance(data, MergeRequestData):
        return EntityKind.MERGE_REQUEST
    return EntityKind.ISSUE if isinstance(data, IssueData) else EntityKind.EPIC


def _project_of(key: str, local: tuple[str, str] | None) -> str | None:
    """The local project root of an MR or issue key whose GitLab project is ``local``'s."""
    target = parse_key(key)
    if local is None or target is None or target.kind is EntityKind.EPIC:
        return None
    path, root = local
    return root if target.namespace == path else None
