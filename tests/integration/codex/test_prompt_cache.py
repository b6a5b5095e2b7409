"""The prompt cache in the real Codex CLI with graphmem off and on: one six-turn session each
(``codex exec``, then ``codex exec resume``), memories relevant on turns 1, 3 and 5. The "on"
session is the package's ``scenario_with_graphmem``, which ``test_memory_in_codex.py`` reads too.

For each request after the first: the **cacheable share** (the share of its bytes -- the
tools, then ``input`` as Codex sent it -- that are an unchanged prefix of the previous
request's) and whether it keeps the whole previous request; per turn, the tokens graphmem
injected (its blocks' characters / 4). With ``-s`` it prints the table of docs/benchmarks.md
("Codex: the prompt cache in the real client"). Asserted: with graphmem every turn keeps the
whole previous request, and the share is within 2 points of graphmem off.
"""

from __future__ import annotations

import itertools
import json
import statistics

import pytest
from support.codex import CodexSandbox, PlayedScenario, play_scenario
from support.fake_responses import FakeResponses, common_prefix, input_items, raw_input, text_of
from support.session_scenario import TURNS

pytestmark = pytest.mark.integration

BLOCK_OPEN = '<memory source="graphmem">'


def prompt(body: bytes) -> bytes:
    """What the provider caches by prefix: the tools (they open the prompt), then the input."""
    tools = json.dumps(json.loads(body).get("tools"), sort_keys=True).encode()
    return tools + b"\n" + raw_input(body)


def measure(raw: list[bytes]) -> tuple[float, int, list[int]]:
    """Mean cacheable share, turns keeping the whole previous request, tokens injected per turn."""
    shares, kept = [], 0
    for before, now in itertools.pairwise(prompt(r) for r in raw):
        shares.append(common_prefix(before, now) / len(now))
        kept += now.startswith(before)
    injected, seen = [], 0
    for body in raw:
        items = input_items(json.loads(body))
        blocks = [text_of(i) for i in items[seen:] if text_of(i).startswith(BLOCK_OPEN)]
        injected.append(sum(len(b) for b in blocks) // 4)
        seen = len(items)
    return statistics.mean(shares), kept, injected


def test_graphmem_keeps_the_prompt_cache_of_a_codex_session(
    codex: CodexSandbox, fake_model: FakeResponses, scenario_with_graphmem: PlayedScenario
) -> None:
    play_scenario(codex)  # graphmem not installed
    off = measure(list(fake_model.raw))
    on = measure(scenario_with_graphmem.raw)

    pairs = len(TURNS) - 1
    print("\n| graphmem | Cacheable share | Turns keeping the previous request | Tokens injected per turn |")
    for name, (share, kept, injected) in (("off", off), ("on", on)):
        tokens = f"{statistics.mean(injected):,.0f} ({max(injected):,})"
        print(f"| {name} | {share:.1%} | {kept} of {pairs} | {tokens} |")
    print("tokens injected per turn (on):", on[2])
    assert on[1] == pairs  # every turn keeps the whole previous request
    assert on[0] >= off[0] - 0.02
    assert on[2][0] > 0 and on[2][2] > 0 and on[2][4] > 0  # the boot context and recall went in
    assert on[2][1] == 0 and on[2][3] == 0  # small talk: nothing cleared the floor
