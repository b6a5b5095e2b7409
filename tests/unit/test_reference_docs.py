"""docs/reference/ is what scripts/reference_docs.py renders from the code now: a changed
command, tool, setting or table fails here until the pages are regenerated
(``python scripts/reference_docs.py``, or ``make docs``)."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import pytest

from scripts import reference_docs

RENDERERS = dict(reference_docs.PAGES)
NAMES = list(RENDERERS)


@functools.cache
def rendered(name: str) -> str:
    return RENDERERS[name]()


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_page_is_what_the_code_renders(name: str) -> None:
    path = reference_docs.REFERENCE / name

    assert path.is_file() and path.read_text("utf-8") == rendered(name), (
        f"docs/reference/{name} is stale: run `{reference_docs.COMMAND}` (or `make docs`) and commit it"
    )


def test_check_names_a_stale_page_and_the_command_that_regenerates_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(reference_docs.REFERENCE, tmp_path / "docs" / "reference")
    monkeypatch.setattr(reference_docs, "ROOT", tmp_path)
    monkeypatch.setattr(reference_docs, "REFERENCE", tmp_path / "docs" / "reference")
    monkeypatch.setattr(reference_docs, "PAGES", {name: functools.partial(rendered, name) for name in NAMES})
    page = tmp_path / "docs" / "reference" / "configuration.md"
    page.write_text(page.read_text("utf-8").replace("`9824`", "`9825`"), "utf-8")

    code = reference_docs.main(["--check"])

    assert code == 1
    assert (
        capsys.readouterr().err
        == "docs/reference/configuration.md is stale: run `python scripts/reference_docs.py`\n"
    )


def test_every_command_tool_setting_and_table_is_on_its_page() -> None:
    from graphmem.adapters.kuzu_schema import ENTITY_TABLES
    from graphmem.cli.main import commands
    from graphmem.server.manifest import tool_manifest

    missing = [
        f"## graphmem {name}" for name in commands() if f"\n## graphmem {name}\n" not in rendered("cli.md")
    ]
    missing += [
        f"## {tool['name']}"
        for tool in tool_manifest()["tools"]
        if f"\n## {tool['name']}\n" not in rendered("mcp-tools.md")
    ]
    missing += [
        key
        for key in ("`[server] port`", "`GRAPHMEM_STORE__SSLMODE`")
        if key not in rendered("configuration.md")
    ]
    missing += [
        table for table in ENTITY_TABLES if f"CREATE NODE TABLE {table}(" not in rendered("schema.md")
    ]
    missing += [sql for sql in ("CREATE TABLE memories (",) if sql not in rendered("schema.md")]

    assert missing == []
