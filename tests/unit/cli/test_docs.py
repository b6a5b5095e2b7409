"""docs/cli.md, the CLI guide, has a section for every command that links to the command's
generated reference (docs/reference/cli.md, its options from click), and every command's help
has an example."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphmem.cli.main import commands

DOCS = Path(__file__).resolve().parents[3] / "docs" / "cli.md"
REFERENCE = DOCS.with_name("reference") / "cli.md"
COMMANDS = sorted(commands())


def sections() -> dict[str, str]:
    """``## heading`` → the text under it."""
    parts = re.split(r"^## (.+)$", DOCS.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {heading.strip(): body for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


@pytest.mark.parametrize("name", COMMANDS)
def test_command_has_a_section_in_docs(name: str) -> None:
    assert name in sections(), f"docs/cli.md has no '## {name}' section"


@pytest.mark.parametrize("name", COMMANDS)
def test_the_commands_section_links_to_its_reference(name: str) -> None:
    body = sections().get(name, "")
    anchor = f"graphmem-{name}"

    assert f"(reference/cli.md#{anchor})" in body, f"docs/cli.md '## {name}' does not link to its reference"
    assert f"\n## graphmem {name}\n" in REFERENCE.read_text(encoding="utf-8"), f"no #{anchor} to link to"


def test_the_guide_keeps_no_option_table_the_reference_generates() -> None:
    assert "| Option | Meaning |" not in DOCS.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", COMMANDS)
def test_command_help_has_an_example(name: str) -> None:
    assert "Example:" in (commands()[name].help or "")


def _migrate_examples() -> dict[str, str]:
    from graphmem.cli.store import migrate

    return {"docs/cli.md": sections()["migrate"], "graphmem migrate --help": migrate.help or ""}


@pytest.mark.parametrize("where", ["docs/cli.md", "graphmem migrate --help"])
def test_the_migrate_examples_say_what_each_migration_is_and_the_newest_version(where: str) -> None:
    """The examples are what ``graphmem migrate`` prints: each step's summary as the schema
    declares it, and this graphmem's newest version (they had stopped at 11 and at 5)."""
    from graphmem.adapters.postgres_schema import MIGRATIONS

    text = _migrate_examples()[where]
    summaries = {m.version: m.summary for m in MIGRATIONS}
    steps = re.findall(r"(?:applied|rolled back) (\d+): (.+)", text)
    newest = re.findall(r"\(this graphmem: (\d+)\)", text)

    assert steps and newest
    assert all(summaries.get(int(version)) == summary.strip() for version, summary in steps), steps
    assert {int(n) for n in newest} == {len(MIGRATIONS)}
    if where == "docs/cli.md":  # the guide's first example applies every step
        applied = [int(v) for v in re.findall(r"applied (\d+):", text)]
        assert applied == list(range(1, len(MIGRATIONS) + 1))
