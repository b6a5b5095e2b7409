"""What a repository's docs teach (samples/repos/facts): README and CONTRIBUTING commands and
descriptions, agent instructions' rules, docs pages' headings, read through ``extract_facts``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from graphmem.core.doc_facts import MAX_HEADING_CHARS, MAX_PROCEDURES_PER_FILE, MAX_RULES_PER_FILE
from graphmem.core.project_facts import ProjectFact, extract_facts

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "repos" / "facts"


def sample(path: str) -> str:
    return (SAMPLES / path).read_text("utf-8")


def facts(path: str, text: str | None = None) -> list[ProjectFact]:
    return extract_facts(path, sample(path) if text is None else text)


def texts(path: str, category: str | None = None, text: str | None = None) -> list[str]:
    return [f.text for f in facts(path, text) if category is None or f.category == category]


# -- README and CONTRIBUTING -------------------------------------------------------------------


def test_readme_description_is_its_first_paragraph_without_badges_or_markup() -> None:
    assert texts("README.md", "fact") == [
        "README.md describes the project Ledger: Ledger is the double-entry bookkeeping service "
        "behind Acme Pay: every payment, refund and fee becomes balanced journal entries, "
        "exposed over a REST API."
    ]


def test_readme_commands_become_procedures() -> None:
    assert texts("README.md", "procedure") == [
        "Set up the project with `python -m venv .venv`, then `source .venv/bin/activate`, "
        'then `pip install -e ".[dev]"` (from README.md).',
        "Run the tests with `make test` (from README.md).",
        "Run the linters with `make lint` (from README.md).",
        "Run the database migrations with `alembic upgrade head` (from README.md).",
        "Start the server with `ledger serve --port 8080` (from README.md).",
    ]


def test_the_shop_readme_says_how_to_run_the_tests() -> None:
    shop = (SAMPLES.parent / "shop" / "README.md").read_text("utf-8")

    assert texts("README.md", text=shop) == [
        "README.md describes the project shop: A small shop backend: orders, payments and refunds.",
        "Run the tests with `make test` (from README.md).",
    ]


def test_code_outside_procedure_headings_and_bare_blocks_of_unknown_words_are_not_procedures() -> None:
    readme = (
        "# Tool\n\nA tool that does things well.\n\n## Example\n\n```sh\ntool --fast\n```\n\n"
        "## Usage\n\n```\nsrc/\n  app.py\n```\n\n```\nmake run\n```\n\n"
        "## Install\n\n```python\nimport tool\n```\n"
    )

    assert texts("README.md", "procedure", readme) == ["Run the project with `make run` (from README.md)."]


def test_a_readme_section_that_installs_the_package_by_name_is_for_its_users_not_a_procedure() -> None:
    readme = (
        "# Express\n\nFast, unopinionated, minimalist web framework for Node.js.\n\n"
        "## Installation\n\n```bash\nnpm install express\n```\n\n"
        "## Quick Start\n\n```bash\nnpm install -g express-generator@4\n```\n\n"
        "Create the app:\n\n```bash\nexpress /tmp/foo && cd /tmp/foo\n```\n\n"
        "```bash\nnpm install\n```\n\n"
        "## Running Tests\n\n```bash\nnpm install\nnpm test\n```\n"
    )

    assert texts("README.md", "procedure", readme) == [
        "Install the dependencies with `npm install` (from README.md).",
        "Run the tests with `npm test` (from README.md).",
    ]


def test_a_contributing_guide_keeps_an_install_by_name() -> None:
    guide = "# Contributing\n\n## Setup\n\n```sh\nnpm install -g pnpm\npnpm install\n```\n"

    assert texts("CONTRIBUTING.md", "procedure", guide) == [
        "Set up the project with `npm install -g pnpm`, then `pnpm install` (from CONTRIBUTING.md)."
    ]


def test_readme_procedures_are_bounded() -> None:
    readme = "# Big\n\n## Commands\n\n```sh\n" + "\n".join(f"make target{i}" for i in range(40)) + "\n```\n"

    assert len(texts("README.md", "procedure", readme)) == MAX_PROCEDURES_PER_FILE


def test_an_rst_readme_gives_its_description() -> None:
    rst = "======\nLedger\n======\n\n.. image:: badge.svg\n\nLedger keeps the books for Acme Pay.\n"

    assert texts("README.rst", text=rst) == [
        "README.rst describes the project Ledger: Ledger keeps the books for Acme Pay."
    ]


def test_contributing_gives_its_commands_and_no_description() -> None:
    assert texts("CONTRIBUTING.md") == [
        "Set up the project with `make dev-setup` (from CONTRIBUTING.md).",
        "Run the tests with `make test` (from CONTRIBUTING.md).",
        "Run the tests with `pytest tests/unit -k journal` (from CONTRIBUTING.md).",
    ]


# -- agent instructions ---------------------------------------------------------------------------


def test_agents_md_rules_are_directives() -> None:
    assert texts("AGENTS.md", "directive") == [
        "Directive from AGENTS.md (Git): never push directly to `main`; open a merge request.",
        "Directive from AGENTS.md (Git): rebase on `main` before asking for review.",
        "Directive from AGENTS.md (Code): use `Decimal` for money, never `float`.",
        "Directive from AGENTS.md (Code): always add an Alembic migration when a model changes.",
        "Directive from AGENTS.md (Code): before committing: run `make lint`.",
        "Directive from AGENTS.md (Code): before committing: run `make test`.",
        "Directive from AGENTS.md (Code): prefer small functions.",
    ]


def test_agents_md_other_bullets_are_facts_and_its_commands_procedures() -> None:
    assert texts("AGENTS.md", "fact") == [
        "Noted in AGENTS.md (Code): the API layer lives in `src/ledger/api` "
        "and the domain in `src/ledger/domain`."
    ]
    assert texts("AGENTS.md", "procedure") == ["Run the tests with `make test` (from AGENTS.md)."]


def test_graphmem_own_section_is_ignored() -> None:
    assert not [text for text in texts("AGENTS.md") if "graphmem" in text or "session" in text]


def test_the_section_graphmem_install_writes_is_not_the_repositorys_rules() -> None:
    from graphmem.adapters.agents_md import section  # what `graphmem install` writes

    written = "# Agents\n\n- Never log secrets.\n\n" + section(["opencode", "codex"]) + "\n"

    assert "graphmem:start for opencode, codex" in written
    assert texts("AGENTS.md", text=written) == ["Directive from AGENTS.md: never log secrets."]


def test_an_unterminated_graphmem_section_runs_to_the_end() -> None:
    text = "- Never log secrets.\n<!-- graphmem:start -->\n- Always call graphmem_recall first.\n"

    assert texts("AGENTS.md", text=text) == ["Directive from AGENTS.md: never log secrets."]


def test_unclosed_graphmem_markers_are_read_in_linear_time() -> None:
    # Each "<!-- graphmem:start for" searched for its "-->" to the end of the file: 30 s for 200 KB
    text = "- Never log secrets.\n" + "<!-- graphmem:start for x " * 8_000

    started = time.perf_counter()
    found = texts("AGENTS.md", text=text)

    assert time.perf_counter() - started < 1.0
    assert found[0] == "Directive from AGENTS.md: never log secrets."


def test_cursorrules_rules_may_be_written_one_per_line() -> None:
    text = "You are an expert in TypeScript\nUse functional components\nNever use `any`\n"

    assert texts(".cursorrules", text=text) == [
        "Directive from .cursorrules: use functional components.",
        "Directive from .cursorrules: never use `any`.",
    ]


def test_copilot_instructions_and_claude_md_are_agent_files() -> None:
    text = "## Style\n\n* Don't add dependencies without asking.\n"

    assert texts(".github/copilot-instructions.md", text=text) == [
        "Directive from .github/copilot-instructions.md (Style): don't add dependencies without asking."
    ]
    assert texts("CLAUDE.md", text=text) == [
        "Directive from CLAUDE.md (Style): don't add dependencies without asking."
    ]


def test_agent_rules_are_bounded() -> None:
    text = "\n".join(f"- Always keep invariant number {i} true." for i in range(200))

    assert len(facts("AGENTS.md", text)) == MAX_RULES_PER_FILE


# -- docs -------------------------------------------------------------------------------------------


def test_a_docs_page_is_one_fact_listing_its_headings() -> None:
    assert facts("docs/guide.md") == [
        ProjectFact(
            "fact",
            "docs/guide.md (Ledger guide) covers: "
            "Accounts, Account types, Posting rules, Refunds and Reconciliation.",
            "docs/guide.md",
            "docs/guide.md#fact:headings",
        )
    ]


def test_a_docs_page_lists_a_bounded_number_of_headings() -> None:
    page = "# Big\n\n" + "\n\n".join(f"## Part {i}" for i in range(40))

    [fact] = facts("docs/big.md", page)

    assert fact.text.endswith("Part 14 and 25 more.")


def test_a_docs_page_without_headings_gives_nothing() -> None:
    assert facts("docs/notes.md", "just some text\n") == []


@pytest.mark.timeout(60)
def test_an_install_line_of_many_options_is_read_at_once() -> None:
    # "-{1,2}[\w-]+" read "--a" two ways: 45 options that end unlike a package name, 2^45 tries
    command = "npm install" + " --a" * 45 + " -"
    text = f"# Shop\n\n## Install\n\n```sh\n{command}\n```\n"

    assert texts("README.md", text=text) == [f"Install the dependencies with `{command}` (from README.md)."]


@pytest.mark.timeout(60)
def test_long_lead_ins_over_thousands_of_bullets_are_read_once() -> None:
    # Twenty 5,000-character lead-ins, each read again for each of 4,000 bullets: six minutes
    leads = "".join(" " * depth + "- " + "word " * 980 + "then:\n" for depth in range(20))
    text = leads + "".join(f"{' ' * 20}- check {n}\n" for n in range(4_000))

    found = facts("AGENTS.md", text)

    assert len(found) == MAX_RULES_PER_FILE
    assert found[0].text.startswith("Directive from AGENTS.md: word word")
    assert found[0].text.endswith("…")


def test_a_rule_names_its_heading_in_a_few_words() -> None:
    heading = "Rules " * 1_000

    (found,) = texts("AGENTS.md", text=f"## {heading}\n\n- Never push to main.\n")

    assert found.startswith("Directive from AGENTS.md (Rules Rules")
    assert found.endswith("…): never push to main.")
    assert len(found) < MAX_HEADING_CHARS + 60
