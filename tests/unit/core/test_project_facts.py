"""Which files of a repository teach something, and the stable keys of what they teach
(samples/repos/facts); what each kind of file says is in test_manifest_facts.py and
test_doc_facts.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.core.project_facts import ProjectFact, doc_text, extract_facts, interesting_doc

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "repos" / "facts"
SAMPLE_FILES = [
    "pyproject.toml",
    "package.json",
    "go.mod",
    "Cargo.toml",
    "README.md",
    "CONTRIBUTING.md",
    "AGENTS.md",
    "docs/guide.md",
]


def sample(path: str) -> str:
    return (SAMPLES / path).read_text("utf-8")


def facts(path: str, text: str | None = None) -> list[ProjectFact]:
    return extract_facts(path, sample(path) if text is None else text)


def keys(path: str, text: str) -> dict[str, str]:
    return {f.text: f.key for f in extract_facts(path, text)}


# -- keys -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "unrelated"),
    [
        ("AGENTS.md", ("## Git\n", "## Git\n\nSome context about branches.\n\n- Tags are made by CI.\n")),
        ("README.md", ("## Development\n", "## Development\n\nWelcome, developer.\n")),
        ("CONTRIBUTING.md", ("## Commit messages", "## Code review\n\nBe kind.\n\n## Commit messages")),
        ("pyproject.toml", ('version = "2.3.0"', 'version = "2.4.0"\nkeywords = ["ledger"]')),
        ("package.json", ('"private": true,', '"private": true,\n  "license": "MIT",')),
        ("go.mod", ("go 1.22\n", "go 1.22\n\nreplace example.com/x => ../x\n")),
        ("Cargo.toml", ('version = "0.4.1"', 'version = "0.4.2"\nlicense = "MIT"')),
        ("docs/guide.md", ("How money moves", "Read this first. How money moves")),
    ],
)
def test_keys_stay_the_same_when_an_unrelated_line_changes(path: str, unrelated: tuple[str, str]) -> None:
    before = sample(path)
    after = before.replace(*unrelated)
    assert after != before

    assert keys(path, before).items() <= keys(path, after).items()


def test_a_manifest_fact_keeps_its_key_when_its_value_changes() -> None:
    before = {f.key: f.text for f in facts("pyproject.toml")}
    after = {
        f.key: f.text for f in facts("pyproject.toml", sample("pyproject.toml").replace('"httpx>=0.27",', ""))
    }

    assert before.keys() == after.keys()
    assert before["pyproject.toml#fact:stack"] != after["pyproject.toml#fact:stack"]


def test_a_reworded_rule_gets_a_new_key_and_the_others_keep_theirs() -> None:
    before = {f.key for f in facts("AGENTS.md")}
    after = {f.key for f in facts("AGENTS.md", sample("AGENTS.md").replace("Prefer small", "Prefer short"))}

    assert before - after == {"AGENTS.md#directive:prefer-small-functions"}
    assert after - before == {"AGENTS.md#directive:prefer-short-functions"}


def test_case_and_markup_do_not_change_a_rule_key() -> None:
    plain = facts("AGENTS.md", "- Never push directly to main.\n")
    styled = facts("AGENTS.md", "- **NEVER** push directly to `main`\n")

    assert (
        [f.key for f in plain]
        == [f.key for f in styled]
        == ["AGENTS.md#directive:never-push-directly-to-main"]
    )


def test_every_sample_fact_has_a_unique_key_naming_its_source() -> None:
    for path in SAMPLE_FILES:
        found = facts(path)
        assert found, path
        assert len({f.key for f in found}) == len(found)
        for fact in found:
            assert fact.source == path and fact.key.startswith(f"{path}#{fact.category}:")
            assert fact.category in {"fact", "directive", "procedure"}
            assert path in fact.text and fact.text.endswith(".")


# -- which files ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "pyproject.toml",
        "package.json",
        "web/package.json",
        "crates/journal/Cargo.toml",
        "go.mod",
        "README.md",
        "readme.rst",
        "README",
        "packages/api/README.md",
        "CONTRIBUTING.md",
        ".github/CONTRIBUTING.md",
        "AGENTS.md",
        "src/payments/AGENTS.md",
        "CLAUDE.md",
        ".cursorrules",
        ".github/copilot-instructions.md",
        "docs/guide.md",
        "docs/deep/er/page.md",
        "docs/examples/usage.md",
    ],
)
def test_interesting_docs(path: str) -> None:
    assert interesting_doc(path)


@pytest.mark.parametrize(
    "path",
    [
        "src/app.py",
        "node_modules/react/package.json",
        "node_modules/react/README.md",
        "web/node_modules/x/AGENTS.md",
        "a/b/c/package.json",
        "samples/repos/shop/pyproject.toml",
        "tests/fixtures/README.md",
        "examples/demo/AGENTS.md",
        "docs/diagram.png",
        "cargo.toml",
        "README.html",
        "src/docs/page.md",
    ],
)
def test_uninteresting_paths(path: str) -> None:
    assert not interesting_doc(path)


def test_a_file_that_is_no_doc_gives_nothing() -> None:
    assert extract_facts("src/app.py", "- Never do this.\n") == []


# -- robustness -----------------------------------------------------------------------------------


@settings(max_examples=3 * settings().max_examples // 5, deadline=None)  # 60 in the full profile
@given(path=st.sampled_from([*SAMPLE_FILES, ".cursorrules", "README.rst"]), text=st.text(max_size=400))
def test_extract_facts_never_raises(path: str, text: str) -> None:
    found = extract_facts(path, text)

    assert len({f.key for f in found}) == len(found)


@settings(max_examples=3 * settings().max_examples // 5, deadline=None)  # 60 in the full profile
@given(
    lines=st.lists(
        st.sampled_from(
            ["# T", "## S", "- Never x", "- a b c d", "```sh", "```", "make test", "", "Use y.", "  - z"]
        ),
        max_size=30,
    )
)
def test_markdown_of_any_shape_never_raises(lines: list[str]) -> None:
    for path in ("AGENTS.md", "README.md", "docs/x.md"):
        extract_facts(path, "\n".join(lines))


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("package.json", '{"name": "shop\\ud83d", "description": "a \\u0000 shop"}'),
        ("Cargo.toml", '[package]\nname = "ledger\\u0000"\n'),
        ("AGENTS.md", "# Rules\n\n- Never push\x00 to main.\n"),
    ],
)
def test_a_fact_holds_no_nul_or_lone_surrogate_from_its_file(path: str, text: str) -> None:
    # A JSON "\\ud83d" is a str UTF-8 cannot encode, and a NUL a text the store refuses: either
    # failed the pass, at once or when the fact changed
    found = extract_facts(path, text)

    assert found
    for fact in found:
        fact.text.encode("utf-8")
        assert "\x00" not in fact.text
        assert "\ufffd" in fact.text


@pytest.mark.parametrize("path", ["AGENTS.md", "README.md", "docs/x.md", "go.mod"])
def test_huge_or_adversarial_input_stays_fast(path: str) -> None:
    hostile = "# " + " " * 100_000 + "#x\n" + "**a " * 50_000 + "\n" + "`" * 100_000 + "\n- " + "[" * 100_000

    started = time.perf_counter()
    extract_facts(path, hostile * 3)

    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(
    "raw",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"Install with make test " * 10,  # a NUL near its start
        b"module shop\n" + bytes(range(0x80, 0x100)) * 4,  # mostly undecodable
        b"Never push " + b"\x1b\x01\x02" * 20,  # mostly control characters
    ],
    ids=["a NUL near its start", "mostly undecodable", "mostly control characters"],
)
def test_bytes_that_are_no_text_give_no_text(raw: bytes) -> None:
    assert doc_text(raw) is None


def test_a_fact_no_memory_may_hold_is_left_out() -> None:
    # Its file's path is in its text: one of 9,000 characters (past any file system's) made a fact
    # over MAX_TEXT_CHARS, which an edit refuses, so the bootstrap that edited it failed
    path = "/".join(["d" * 199] * 45) + "/AGENTS.md"

    assert extract_facts(path, "- Never push to main.\n") == []
    assert extract_facts(path[-4_000:], "- Never push to main.\n")[0].text.endswith(": never push to main.")
