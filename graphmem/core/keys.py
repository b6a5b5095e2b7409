"""How graphmem names what it stores: memory ids and the keys of the entities many producers share.

One helper each, so that a memory is minted one way and a file or a person named by
bootstrap, a session, a memory's text or GitLab is one node of the graph:

- ``event_id()``: a history event's id (``evt_`` and 16 hex digits, random);
- ``memory_id()``: a new memory's id (``mem_`` and 16 hex digits): random, or derived from
  a seed (bootstrap's facts, whose seed is their project and source) or a commit's sha, so that a
  later pass finds the memory it wrote before;
- ``file_key(project, path)``: ``File:<project>::<path>``, the path relative to the project;
- ``person_key(...)``: ``Person:<who>``, see ``person_key``;
- ``shown_key(memory_id, text_hash)``: a memory as a ``<memory>`` block showed it, ``<id>:<12 hex
  digits of its text's hash>``: the ``shown`` of the daemon's ``/plugin/*`` answers, which the
  OpenCode plugin and the Claude Code and Codex hooks keep and send back (``SHOWN_KEY``, at most
  ``MAX_SHOWN_KEYS`` a request) so that a restarted daemon does not show it again.
"""

from __future__ import annotations

import hashlib
import re
import uuid

MEMORY_ID_PREFIX = "mem_"
EVENT_ID_PREFIX = "evt_"
# GitLab's and GitHub's private commit e-mails hold the username: ``123-alice@users.noreply.gitlab.com``.
_NOREPLY = re.compile(r"^(?:\d+[-+])?(?P<username>[^@]+)@users\.noreply\.", re.IGNORECASE)


def memory_id(seed: str | None = None, *, commit: str | None = None) -> str:
    """A memory id: random; or the same for the same ``seed`` (a digest of it); or a commit's
    (its sha's first 16 hex digits, so a commit is one memory however often it is read)."""
    if commit is not None:
        return MEMORY_ID_PREFIX + commit[:16]
    if seed is not None:
        return MEMORY_ID_PREFIX + hashlib.blake2b(seed.encode(), digest_size=8).hexdigest()
    return MEMORY_ID_PREFIX + uuid.uuid4().hex[:16]


# What a client may send back as a memory a block showed; anything else is refused (the daemon) or
# dropped (the hooks' journal). The OpenCode plugin (JavaScript) repeats it, and a test compares them.
SHOWN_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}:[0-9a-f]{12}")
# The most a request names as shown: a session's boot block (dozens) and 200 turns' blocks of a few each.
MAX_SHOWN_KEYS = 2000
_SHOWN_HASH_CHARS = 12


def shown_key(memory_id: str, text_hash: str) -> str:
    """A memory as a block showed it: its id and the start of its text's hash (a memory whose text
    changed since is another key, and may be shown again)."""
    return f"{memory_id}:{text_hash[:_SHOWN_HASH_CHARS]}"


_NUMBERED_ID = re.compile(r"mem_[0-9a-f]{16}")
_SIGN = 1 << 63


def memory_id_number(memory_id: str) -> int | None:
    """A ``memory_id``'s 16 hex digits as a signed 64-bit number (what an index can keep
    in a numeric column); None for an id of another shape (an import may bring its own)."""
    if _NUMBERED_ID.fullmatch(memory_id) is None:
        return None
    value = int(memory_id[len(MEMORY_ID_PREFIX) :], 16)
    return value - (_SIGN << 1) if value >= _SIGN else value


def numbered_memory_id(number: int) -> str:
    """The memory id whose ``memory_id_number`` is ``number``."""
    return f"{MEMORY_ID_PREFIX}{number & ((_SIGN << 1) - 1):016x}"


def event_id() -> str:
    """A new history event's id (``evt_`` and 16 hex digits, random)."""
    return EVENT_ID_PREFIX + uuid.uuid4().hex[:16]


def file_key(project: str, path: str) -> str:
    """The key of the file ``path`` (relative, ``/``-separated) of ``project``."""
    return f"File:{project}::{path}"


def person_key(*, email: str | None = None, username: str | None = None, name: str | None = None) -> str:
    """The key of a person: ``Person:<username>`` when the username is known (GitLab's users,
    and git authors whose e-mail is GitLab's or GitHub's private ``users.noreply`` address),
    else ``Person:<e-mail, lower-cased>``, else ``Person:<name>``."""
    if not username and email:
        noreply = _NOREPLY.match(email.strip())
        if noreply is not None:
            username = noreply["username"]
    if username:
        return f"Person:{username}"
    if email and email.strip():
        return f"Person:{email.strip().lower()}"
    return f"Person:{(name or '').strip()}"
