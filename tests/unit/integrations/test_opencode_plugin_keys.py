"""The OpenCode plugin (JavaScript) sends back the memories its blocks showed as the daemon checks
them: its pattern and bound are graphmem/core/keys.py's, which the daemon's ``/plugin/turn`` and the
Claude Code and Codex hooks' journal use. A key the daemon would refuse costs the turn its memory
(a 400), so a copy that drifted would break the plugin, not only differ."""

from __future__ import annotations

import re
from importlib import resources

from graphmem.core import keys
from graphmem.integrations import hook_journal
from graphmem.server import plugin_routes


def plugin_constant(name: str) -> str:
    source = resources.files("graphmem.integrations").joinpath("opencode/graphmem.js").read_text("utf-8")
    found = re.search(rf"^const {name} = (.+);$", source, re.MULTILINE)
    assert found is not None, f"graphmem.js defines no {name}"
    return found.group(1)


def test_the_plugin_checks_a_shown_key_with_the_daemons_pattern() -> None:
    assert plugin_constant("SHOWN_KEY") == f"/^{keys.SHOWN_KEY.pattern}$/"


def test_the_plugin_sends_no_more_shown_keys_than_the_daemon_takes() -> None:
    assert int(plugin_constant("MAX_SHOWN")) == keys.MAX_SHOWN_KEYS


def test_the_daemon_and_the_hooks_check_shown_keys_with_the_one_definition() -> None:
    field = plugin_routes.TurnBody.model_fields["shown"]
    bound = next(m.max_length for m in field.metadata if hasattr(m, "max_length"))

    assert bound == keys.MAX_SHOWN_KEYS == hook_journal.MAX_SHOWN
    assert hook_journal.SHOWN_KEY is keys.SHOWN_KEY


def test_a_minted_key_is_one_the_pattern_accepts() -> None:
    assert keys.SHOWN_KEY.fullmatch(keys.shown_key(keys.memory_id(), "0123456789abcdef" * 2))
