"""Markdown read into blocks: headings with their sections, code, items, paragraphs, no markup."""

from __future__ import annotations

import pytest

from graphmem.core.markdown import Block, read_blocks

README = """\
# Ledger

A [double-entry](https://example.com) **ledger** with `make test`.

## Development

### Tests

- Run `make test` before
  pushing.

```sh
make test
```
"""


def test_a_document_reads_as_blocks_each_under_its_headings() -> None:
    assert read_blocks(README) == [
        Block("title", "Ledger", 1),
        Block("paragraph", "A double-entry ledger with `make test`."),
        Block("heading", "Development", 2, section=("Development",)),
        Block("heading", "Tests", 3, section=("Development", "Tests")),
        Block("item", "Run `make test` before pushing.", section=("Development", "Tests")),
        Block("code", "make test", lang="sh", section=("Development", "Tests")),
    ]


def test_html_comments_tables_and_rulers_give_no_paragraph() -> None:
    blocks = read_blocks("| a | b |\n| - | - |\n\n---\n\n<br>\n")

    assert [b for b in blocks if b.kind == "paragraph"] == []


def test_rules_written_one_per_line_become_sentences() -> None:
    [block] = read_blocks("Use ruff\nNever push to main\n", line_sentences=True)

    assert block.text == "Use ruff. Never push to main"


def test_an_rst_heading_is_underlined() -> None:
    blocks = read_blocks("Ledger\n======\n\nInstall\n-------\n\nText here.\n", rst=True)

    assert [(b.kind, b.text) for b in blocks] == [
        ("title", "Ledger"),
        ("heading", "Install"),
        ("paragraph", "Text here."),
    ]


def test_unclosed_markup_is_kept_as_text() -> None:
    [block] = read_blocks("see [the docs and *this and <that\n")

    assert block.text == "see [the docs and *this and <that"


@pytest.mark.timeout(60)
def test_headings_ending_in_long_runs_of_spaces_are_read_at_once() -> None:
    # Each space of the run was tried as where the closing #s start: 0.65 s a line, 4 min for these
    lines = ["# Ledger", *(f"## Part {n}" + " " * 4_900 + "x" for n in range(400))]

    blocks = read_blocks("\n".join(lines))

    assert len(blocks) == 401
    assert blocks[1].text == "Part 0" + " " + "x"


def test_a_heading_loses_its_closing_sequence_only() -> None:
    blocks = read_blocks("# Ledger ##\n\n## C# notes\n\n## ##\n\n## Tests #\n")

    assert [b.text for b in blocks] == ["Ledger", "C# notes", "Tests"]
