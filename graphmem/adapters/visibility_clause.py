"""The condition of the memories a ``Visibility`` lets a caller see, for the stores that ask a
query language (Kùzu's Cypher, PostgreSQL's SQL): decided once, written in each one's dialect.

A memory is seen when its status is one asked; it is global, or of the asked project (or of one
of its aliases); of an asked category; created since the time asked; on no branch or the asked
one (unless every branch is asked); and, when expired memories count as archived, not past its
expiry while current. The fake store (``fake_store.py``) and the full-text index
(``lexical_visibility.py``) apply the same rules in Python and in tantivy's queries.

A status or a category is asked as a read gives it (``one_of_as_read``): a value graphmem never
writes (a row of a team's store written by hand) is read as archived, or as a fact
(``record_rows.UNKNOWN_STATUS``, ``UNKNOWN_CATEGORY``), and is so listed, searched and left out:
``list --status archived`` finds it, what asks current memories only never does. The fake store
and the full-text index hold a memory as read, so their rules need no such arm.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from graphmem.adapters.record_rows import UNKNOWN_CATEGORY, UNKNOWN_STATUS
from graphmem.core.models import CURRENT_STATUSES
from graphmem.core.ports import Visibility


@dataclass(frozen=True, slots=True)
class Dialect:
    """How a store's query language writes what the condition needs."""

    param: Callable[[str], str]  # a named parameter: ``$name``, ``%(name)s``
    one_of: Callable[[str, str], str]  # a column among a list parameter (column, written parameter)
    time: Callable[[datetime], Any]  # a timestamp as the store takes it


def visibility_clause(
    visibility: Visibility, dialect: Dialect, alias: str = "m"
) -> tuple[str, dict[str, Any]]:
    """The condition (with its named parameters) of the memories named ``alias`` that
    ``visibility`` shows."""
    p, one_of = dialect.param, dialect.one_of
    status, params = one_of_as_read(
        dialect, f"{alias}.status", "statuses", visibility.statuses, UNKNOWN_STATUS
    )
    clauses = [] if status is None else [status]
    if visibility.project is None:
        clauses.append(f"{alias}.scope = 'global'")
    elif not visibility.aliases:
        clauses.append(f"({alias}.scope = 'global' OR {alias}.project = {p('project')})")
        params["project"] = visibility.project
    else:  # names its memories are still kept under, till a writer moves them (Visibility.aliases)
        clauses.append(f"({alias}.scope = 'global' OR {one_of(f'{alias}.project', p('projects'))})")
        params["projects"] = sorted(visibility.projects)
    if visibility.categories is not None:
        category, asked = one_of_as_read(
            dialect, f"{alias}.category", "categories", visibility.categories, UNKNOWN_CATEGORY
        )
        clauses.extend([] if category is None else [category])
        params.update(asked)
    if visibility.since is not None:
        clauses.append(f"{alias}.created_at >= {p('since')}")
        params["since"] = dialect.time(visibility.since)
    if not visibility.all_branches:
        if visibility.branch is None:
            clauses.append(f"{alias}.branch IS NULL")
        else:
            clauses.append(f"({alias}.branch IS NULL OR {alias}.branch = {p('branch')})")
            params["branch"] = visibility.branch
    if visibility.hides_expired and visibility.expired_by is not None:  # counts as archived
        current = one_of(f"{alias}.status", p("current"))
        clauses.append(
            f"({alias}.expires_at IS NULL OR {alias}.expires_at > {p('expired_by')} OR NOT ({current}))"
        )
        params["expired_by"] = dialect.time(visibility.expired_by)
        params["current"] = sorted(s.value for s in CURRENT_STATUSES)
    return " AND ".join(clauses), params


def one_of_as_read(
    dialect: Dialect, column: str, name: str, asked: Collection[str], read_as: StrEnum
) -> tuple[str | None, dict[str, Any]]:
    """The condition (with its parameter ``name``) that ``column`` holds one of the values
    ``asked`` (of ``read_as``'s enum) as a read gives it: a value none of the enum's (or none
    at all) is read as ``read_as`` (``record_rows``), so it is asked with ``read_as`` and only
    then; asked so, the column is tested against the values not asked. None: every value is
    read as one asked (no condition)."""
    if read_as not in asked:
        return dialect.one_of(column, dialect.param(name)), {name: sorted(str(value) for value in asked)}
    others = sorted(member.value for member in type(read_as) if member not in asked)
    if not others:
        return None, {}
    return f"({column} IS NULL OR NOT ({dialect.one_of(column, dialect.param(name))}))", {name: others}
