"""In which order pytest-xdist hands the tests out: the costliest work first.

With ``--dist loadgroup`` pytest-xdist cuts the collection into work units (the tests of one
group, or a test of none: ``support/worker_groups.py``) and gives a worker the next unit of its
queue whenever the worker has two tests or fewer left. The queue is in collection order once
``tests/conftest.py`` turns off pytest-xdist's own reordering, which puts the units with the most
tests first: a group of 26 quick route checks went before a six-turn session of the real OpenCode
client, which then came among the last units and ran while the other worker had nothing left.
A run is as short as its two workers finish close together, so the longest units go first and
the quick ones fill in at the end.

What a unit costs is read from what its tests use, never from a table of seconds that drifts:

0. tests that drive a real agent client (OpenCode, Claude Code, Codex: ``CLIENT_FIXTURES``),
   each several processes of Node or a native client per turn, tens of seconds; one client's,
   then the next one's, in turn, so that on a clean clone the two workers' first tests install
   two clients from npm side by side rather than one waiting for the other's install lock;
1. the groups of integration tests around a shared daemon, store or browser, the larger first;
2. the other integration tests (a daemon, a CLI or the real model each);
3. the groups of unit tests, the larger first;
4. the unit tests (a few hundredths of a second each: the filler at the end).

Within a class, units keep their collection order, and a unit's tests keep theirs.
"""

from __future__ import annotations

import pytest

# Session fixtures that install a real agent client: a test using one runs that client.
CLIENT_FIXTURES = frozenset({"opencode_binary", "claude_binary", "codex_binary"})
INTEGRATION = "tests/integration/"


def unit_of(item: pytest.Item) -> str:
    """The work unit pytest-xdist puts ``item`` in: its group, or the test alone."""
    marker = item.get_closest_marker("xdist_group")
    if marker is None:
        return item.nodeid
    return str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))


def clients_of(item: pytest.Item) -> list[str]:
    """The agent clients ``item`` runs (their install fixtures)."""
    return sorted(CLIENT_FIXTURES.intersection(getattr(item, "fixturenames", ())))


def cost_class(item: pytest.Item, grouped: bool) -> int:
    """0 (costliest) to 4 (cheapest), from the kind of test ``item`` is (the module's docstring)."""
    if clients_of(item):
        return 0
    integration = item.nodeid.startswith(INTEGRATION)
    if grouped:
        return 1 if integration else 3
    return 2 if integration else 4


def costliest_first(items: list[pytest.Item]) -> None:
    """Sort ``items`` in place so that the costliest units come first (the module's docstring)."""
    units: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        units.setdefault(unit_of(item), []).append(index)
    ranks: dict[str, tuple[int, int, int, int]] = {}
    turns: dict[str, int] = {}  # how many units of each client came before
    for unit, indices in units.items():
        grouped = items[indices[0]].get_closest_marker("xdist_group") is not None
        cost = min(cost_class(items[i], grouped) for i in indices)
        turn = 0
        if cost == 0:
            client = min(name for i in indices for name in clients_of(items[i]))
            turn = turns[client] = turns.get(client, -1) + 1
        ranks[unit] = (cost, turn, -len(indices), indices[0])
    items[:] = sorted(items, key=lambda item: ranks[unit_of(item)])
