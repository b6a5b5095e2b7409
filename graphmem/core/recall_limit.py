"""How many hits one recall may return: one bound, checked with one message by every door (the
service, ``graphmem recall --limit``, the ``recall`` tool, ``[recall] limit``)."""

from __future__ import annotations

from graphmem.errors import InvalidInputError

MIN_RECALL_LIMIT = 1
# Past a few hundred hits a recall is a dump, not an answer (`graphmem list` or `export` list all).
MAX_RECALL_LIMIT = 200


def recall_limit_problem(limit: object) -> str | None:
    """What is wrong with ``limit`` as a recall's number of hits, or None."""
    whole = isinstance(limit, int) and not isinstance(limit, bool)
    if whole and MIN_RECALL_LIMIT <= limit <= MAX_RECALL_LIMIT:  # type: ignore[operator]
        return None
    return (
        f"limit must be a whole number from {MIN_RECALL_LIMIT} to {MAX_RECALL_LIMIT}, not {limit!r:.40}: "
        "ask for fewer hits, or leave it out for the [recall] limit setting."
    )


def check_recall_limit(limit: object) -> int:
    """``limit`` when it is a recall's number of hits; ``InvalidInputError`` saying the bound."""
    problem = recall_limit_problem(limit)
    if problem is not None:
        raise InvalidInputError(problem)
    assert isinstance(limit, int)
    return limit
