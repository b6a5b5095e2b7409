"""docs/benchmarks.md gives, for every benchmark, the command that reproduces its figures: each
`graphmem bench` command it writes must exist with the options it names, and every link other
docs make into it (or into CHANGELOG.md, where superseded runs go) must find its heading."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from graphmem.cli.main import commands

ROOT = Path(__file__).resolve().parents[3]
BENCHMARKS = ROOT / "docs" / "benchmarks.md"
LINKED_PAGES = ("benchmarks.md", "CHANGELOG.md")


def bench_group() -> click.Group:
    group = commands()["bench"]
    assert isinstance(group, click.Group)
    return group


def bench_commands() -> dict[str, click.Command]:
    group = bench_group()
    with click.Context(group) as ctx:
        found = {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}
    return {name: command for name, command in found.items() if command is not None}


def written_commands() -> list[str]:
    """Every `graphmem bench ...` of the page: lines of its code blocks and inline code."""
    text = BENCHMARKS.read_text(encoding="utf-8")
    found = re.findall(r"^(?:\$ |cd \S+ && )?(graphmem bench [^\n`]*)$", text, flags=re.MULTILINE)
    found += re.findall(r"`(graphmem bench [^`\n]*)`", text)
    return sorted(set(found))


@pytest.mark.parametrize("line", written_commands())
def test_each_written_command_exists_with_its_options(line: str) -> None:
    words = shlex.split(line.replace("[", " ").replace("]", " ").replace("...", " "))
    name = words[2]
    command = bench_commands().get(name)

    assert command is not None, f"docs/benchmarks.md runs `graphmem bench {name}`, which does not exist"
    options = (option for param in command.params for option in (*param.opts, *param.secondary_opts))
    known = {"--help", *options}
    unknown = [word for word in words[3:] if word.startswith("--") and word not in known]
    assert not unknown, f"docs/benchmarks.md: `{line}` names {unknown}, not options of graphmem bench {name}"


@pytest.mark.parametrize("name", sorted(bench_commands()))
def test_every_benchmark_has_its_command_in_the_page(name: str) -> None:
    assert any(line.split()[2] == name for line in written_commands()), (
        f"docs/benchmarks.md does not say how to run `graphmem bench {name}`"
    )


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings (a repeated heading gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    found = set()
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    for heading in re.findall(r"^#{1,6} +(.+?) *$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(f"{slug}-{count}" if count else slug)
    return found


def links() -> list[tuple[str, Path, str]]:
    pages = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md", ROOT / "CHANGELOG.md"]
    found = []
    for page in pages:
        for target, anchor in re.findall(r"\]\(([^)\s#]*)#([^)\s]+)\)", page.read_text(encoding="utf-8")):
            linked = (page.parent / target).resolve() if target else page
            if linked.name in LINKED_PAGES:
                found.append((str(page.relative_to(ROOT)), linked, anchor))
    return found


@pytest.mark.parametrize(("page", "linked", "anchor"), links())
def test_links_into_the_page_and_the_changelog_find_their_heading(
    page: str, linked: Path, anchor: str
) -> None:
    assert anchor in anchors(linked), f"{page} links to {linked.name}#{anchor}, which no heading there makes"
