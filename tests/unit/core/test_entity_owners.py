"""What a write may change of a stored entity on a store that keeps owners (``core.entity_owners``);
tests/integration/test_team_entities.py holds PostgreSQL's statements to the same answers."""

from __future__ import annotations

from graphmem.core.entity_owners import changes


def test_a_shared_write_changes_the_teams_entity() -> None:
    assert changes(None, "alice", shared=True)


def test_a_private_write_never_changes_the_teams_entity() -> None:
    assert not changes(None, "alice", shared=False)


def test_any_write_changes_the_writers_own_entity() -> None:
    assert changes("alice", "alice", shared=False) and changes("alice", "alice", shared=True)


def test_a_private_write_never_changes_another_persons_private_entity() -> None:
    assert not changes("bob", "alice", shared=False)


def test_a_shared_write_publishes_another_persons_private_entity() -> None:
    assert changes("bob", "alice", shared=True)
