"""What of Codex's ``config.toml`` is graphmem's, read as Codex reads the file.

graphmem owns ``[mcp_servers.graphmem]`` and, under ``hooks``, each group whose command runs its
Codex hook (``is_ours``). TOML lets the same settings be laid out in many ways (a table's parts
apart from each other in the file, dotted keys), which tomlkit, the editor ``codex_config``
uses, gives as different objects; what they mean is one value. This module reads that value
with the standard library's ``tomllib``, a strict parser independent of the editor, so that an
install or an uninstall is checked on what the text it writes says, before it is written:
graphmem's entries in it (``ours_in``), all there or none left, and the user's settings
(``users``), which must come out as they went in (``check_install``, ``check_uninstall``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from graphmem.errors import IntegrationError

SERVER_NAME = "graphmem"
HOOK_MODULE = "graphmem.integrations.codex_hook"
SERVERS = "mcp_servers"
HOOKS = "hooks"


def is_ours(group: Any) -> bool:
    """Whether a hook group is graphmem's: one of its hooks runs graphmem's Codex hook."""
    hooks = group.get("hooks") if isinstance(group, Mapping) else None
    if not isinstance(hooks, list):
        return False
    return any(isinstance(h, Mapping) and HOOK_MODULE in str(h.get("command", "")) for h in hooks)


def read(path: Path, text: str) -> dict[str, Any]:
    """What ``text`` (``path``'s) says, as plain values; ``IntegrationError`` when it is not TOML."""
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:  # RecursionError: arrays nested too deep
        reason = str(exc) if isinstance(exc, tomllib.TOMLDecodeError) else "values nested too deep"
        raise IntegrationError(
            f"{path} is not valid TOML ({reason}). Fix it and run the command again; nothing was changed."
        ) from None


def ours_in(config: Mapping[str, Any]) -> list[str]:
    """graphmem's entries in ``config``, as the user finds them in the file: its server, then one
    ``[[hooks.EVENT]]`` for each of its hook groups."""
    found = []
    servers = config.get(SERVERS)
    if isinstance(servers, Mapping) and SERVER_NAME in servers:
        found.append(f"[{SERVERS}.{SERVER_NAME}]")
    hooks = config.get(HOOKS)
    if isinstance(hooks, Mapping):
        for event, groups in hooks.items():
            if isinstance(groups, list):
                found.extend(f"[[{HOOKS}.{event}]]" for group in groups if is_ours(group))
    return found


def users(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` without graphmem's entries, nor the event lists, ``hooks`` and ``mcp_servers``
    tables left empty: what must be the same before and after an install or an uninstall
    (uninstall removes a ``[hooks]`` that held only graphmem's; Codex reads no difference)."""
    left = dict(config)
    servers = left.get(SERVERS)
    if isinstance(servers, Mapping):
        left[SERVERS] = {name: server for name, server in servers.items() if name != SERVER_NAME}
    hooks = left.get(HOOKS)
    if isinstance(hooks, Mapping):
        kept = {}
        for event, groups in hooks.items():
            if not isinstance(groups, list):
                kept[event] = groups
            elif users_groups := [group for group in groups if not is_ours(group)]:
                kept[event] = users_groups
        left[HOOKS] = kept
    return {key: value for key, value in left.items() if not (key in (SERVERS, HOOKS) and value == {})}


def check_install(path: Path, before: Mapping[str, Any], text: str, events: Sequence[str]) -> None:
    """``text`` holds graphmem's server, one hook group of each of ``events``, and the user's
    settings of ``before``; else ``IntegrationError``, and nothing is written (an edit went wrong
    for this file's layout)."""
    after = read(path, text)
    found = ours_in(after)
    wanted = [f"[{SERVERS}.{SERVER_NAME}]", *(f"[[{HOOKS}.{event}]]" for event in events)]
    if users(after) != users(before) or any(found.count(entry) != 1 for entry in wanted):
        raise IntegrationError(
            f"graphmem cannot add its entries to {path} without changing your own settings in it: "
            "nothing was changed. Put its [mcp_servers.*] tables next to each other, and its "
            "[hooks.*] tables too, and run the command again."
        )


def check_uninstall(path: Path, before: Mapping[str, Any], text: str | None) -> None:
    """``text`` (None: the file is deleted) holds nothing of graphmem's and the user's settings of
    ``before``; else ``IntegrationError`` saying what to delete by hand, and nothing is written."""
    after = read(path, text or "")
    left = ours_in(after)
    if left:
        raise IntegrationError(
            f"graphmem cannot remove its {', '.join(left)} from {path}: it is written in a form "
            f"graphmem does not edit (an inline table or array). Nothing was changed: {by_hand(left)}, "
            "then run `graphmem doctor` to check."
        )
    if users(after) != users(before):
        everything = [f"[{SERVERS}.{SERVER_NAME}]", f"[[{HOOKS}.EVENT]]"]
        raise IntegrationError(
            f"graphmem cannot remove its entries from {path} without changing your own settings in "
            f"it. Nothing was changed: {by_hand(everything)}, then run `graphmem doctor` to check."
        )


def by_hand(left: Sequence[str]) -> str:
    """What the user does about graphmem's entries ``left`` (``ours_in``) an uninstall did not remove."""
    what = "it" if len(left) == 1 else "them"
    if any(entry.startswith(f"[[{HOOKS}.") for entry in left):
        return f"delete {what} by hand (graphmem's hook groups are those whose command runs {HOOK_MODULE})"
    return f"delete {what} by hand"
