"""graphmem's one section of AGENTS.md for every client installed in a folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.adapters import agents_md
from graphmem.core.injection import BLOCK_OPEN
from graphmem.errors import IntegrationError

PATH = Path("AGENTS.md")
USER = "# Shop\n\nRun `make test` before you commit.\n"
OLD_START = "<!-- graphmem:start -->"


def test_each_client_joins_and_leaves_the_one_section_and_the_users_text_stays() -> None:
    opencode = agents_md.with_client(USER, "opencode", PATH)
    both = agents_md.with_client(opencode, "codex", PATH)

    assert both == USER + "\n" + agents_md.section({"codex", "opencode"}) + "\n"
    assert agents_md.clients_in(both, PATH) == {"opencode", "codex"}
    assert agents_md.with_client(both, "opencode", PATH) == both  # twice changes nothing
    assert agents_md.without_client(both, "codex", PATH) == opencode
    assert agents_md.without_client(opencode, "opencode", PATH) == USER
    assert agents_md.without_client(USER, "codex", PATH) == USER  # none of ours: unchanged


def test_a_file_of_only_graphmems_section_goes_with_its_last_client() -> None:
    only = agents_md.with_client(None, "codex", PATH)

    assert agents_md.without_client(only, "codex", PATH) is None
    assert agents_md.without_client(None, "codex", PATH) is None


@pytest.mark.parametrize(
    ("body", "owner"),
    [("The `graphmem_*` tools ...", "opencode"), ("The tools (`mcp__graphmem` in Codex) ...", "codex")],
)
def test_a_section_from_before_the_marker_named_its_clients_belongs_to_the_one_that_wrote_it(
    body: str, owner: str
) -> None:
    old = f"{USER}\n{OLD_START}\n{body}\n{agents_md.SECTION_END}\n"

    assert agents_md.clients_in(old, PATH) == {owner}
    other = "codex" if owner == "opencode" else "opencode"
    assert agents_md.without_client(old, other, PATH) == old  # not the other's to remove
    assert agents_md.without_client(old, owner, PATH) == USER


def test_windows_line_endings_stay() -> None:
    text = "# Shop\r\n"

    written = agents_md.with_client(text, "opencode", PATH)

    assert written.count("\n") == written.count("\r\n")
    assert agents_md.without_client(written, "opencode", PATH) == text


def test_unknown_names_in_the_marker_are_no_client() -> None:
    text = f"<!-- graphmem:start for opencode, vim -->\nx\n{agents_md.SECTION_END}\n"

    assert agents_md.clients_in(text, PATH) == {"opencode"}


def test_a_section_never_closed_is_an_error_naming_its_line() -> None:
    with pytest.raises(IntegrationError, match=r"line 5 .* never closes it"):
        agents_md.with_client(USER + "\n" + OLD_START + "\nhalf\n", "codex", PATH)


def test_the_section_never_quotes_the_memory_blocks_marker() -> None:
    # The clients put AGENTS.md in the system prompt; the OpenCode plugin must not take a quote
    # of the marker for the block it already added there.
    assert BLOCK_OPEN not in agents_md.section({"opencode", "codex"})
