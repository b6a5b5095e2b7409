"""Facts, directives and procedures from a repository's manifests and docs (samples/repos/facts)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.core.project_facts import (
    MAX_PROCEDURES_PER_FILE,
    MAX_RULES_PER_FILE,
    ProjectFact,
    extract_facts,
    interesting_doc,
)

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


def texts(path: str, category: str | None = None, text: str | None = None) -> list[str]:
    return [f.text for f in facts(path, text) if category is None or f.category == category]


def keys(path: str, text: str) -> dict[str, str]:
    return {f.text: f.key for f in extract_facts(path, text)}


# -- manifests ------------------------------------------------------------------------------------


def test_pyproject_gives_the_project_its_python_and_its_stack() -> None:
    found = texts("pyproject.toml", "fact")

    assert (
        "The Python project ledger: Double-entry bookkeeping API for the payments team (from pyproject.toml)."
        in found
    )
    assert "The project requires Python >=3.11 (from pyproject.toml)." in found
    assert (
        "The project uses FastAPI, SQLAlchemy, Alembic, HTTPX, pydantic-settings and structlog "
        "(from pyproject.toml)." in found
    )
    assert "The project installs the command `ledger` (ledger.cli:main) (from pyproject.toml)." in found


def test_pyproject_tool_tables_become_conventions() -> None:
    found = texts("pyproject.toml")

    assert (
        "Tests run with pytest: tests in tests, options `-ra --strict-markers` (from pyproject.toml)."
        in found
    )
    assert (
        "The project lints with Ruff: line length 100, target py311, rules E, F, I, B, UP "
        "(from pyproject.toml)." in found
    )
    assert "The project type-checks with mypy in strict mode (from pyproject.toml)." in found
    assert texts("pyproject.toml", "directive") == [
        "Test coverage must stay at or above 90% (coverage fail_under, from pyproject.toml)."
    ]


def test_poetry_projects_are_read_too() -> None:
    poetry = (
        '[tool.poetry]\nname = "api"\ndescription = "The API."\n'
        '[tool.poetry.dependencies]\npython = "^3.12"\ndjango = "^5.0"\ncelery = "^5.3"\n'
    )

    assert texts("pyproject.toml", text=poetry) == [
        "The Python project api: The API (from pyproject.toml).",
        "The project requires Python ^3.12 (from pyproject.toml).",
        "The project uses Django and Celery (from pyproject.toml).",
    ]


def test_package_json_scripts_are_procedures_with_its_package_manager() -> None:
    assert texts("package.json", "procedure") == [
        "Run the tests with `pnpm run test` (runs `vitest run`; from package.json).",
        "Build the project with `pnpm run build` (runs `next build`; from package.json).",
        "Run the linter with `pnpm run lint` (runs `eslint . --max-warnings 0`; from package.json).",
        "Start the development server with `pnpm run dev` (runs `next dev`; from package.json).",
        "Start the app with `pnpm run start` (runs `next start`; from package.json).",
    ]


def test_package_json_names_frameworks_tools_manager_and_engines() -> None:
    found = texts("package.json", "fact")

    assert (
        "The TypeScript package @acme/ledger-web: Back-office UI for the ledger (from package.json)." in found
    )
    assert (
        "The project uses Next.js, React, Prisma, TanStack Query, Zod and clsx (from package.json)." in found
    )
    assert (
        "The project's development tools include ESLint, TypeScript and Vitest (from package.json)." in found
    )
    assert "The project uses pnpm 9.1.0 as its package manager (from package.json)." in found
    assert "The project requires node >=20 (from package.json)." in found


def test_a_nested_package_json_says_where_to_run_its_scripts() -> None:
    text = '{"scripts": {"test": "jest"}}'

    assert texts("web/package.json", text=text) == [
        "Run the tests with `npm run test` in `web/` (runs `jest`; from web/package.json)."
    ]


def test_go_mod_gives_module_version_and_direct_requirements() -> None:
    assert texts("go.mod") == [
        "The project is the Go module github.com/acme/ledger-sync, for Go 1.22 with the go1.22.3 toolchain "
        "(from go.mod).",
        "The project uses github.com/go-chi/chi/v5, github.com/jackc/pgx/v5 and github.com/spf13/cobra "
        "(from go.mod).",
    ]


def test_cargo_toml_gives_crate_edition_dependencies_and_workspace() -> None:
    assert texts("Cargo.toml") == [
        "The Rust crate ledger-export: Exports ledger journals to Parquet (from Cargo.toml).",
        "The project uses Rust edition 2021 and Rust 1.75 or newer (from Cargo.toml).",
        "The project uses arrow, parquet, serde and tokio (from Cargo.toml).",
        "The Cargo workspace has the members crates/journal and crates/cli (from Cargo.toml).",
    ]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("pyproject.toml", "[project\nname = "),
        ("pyproject.toml", ""),
        ("package.json", "{not json"),
        ("package.json", "[1, 2]"),
        ("package.json", "null"),
        ("package.json", "[" * 100_000),
        ("go.mod", "this is not go.mod\n"),
        ("Cargo.toml", "[package]]"),
    ],
)
def test_invalid_manifests_give_no_facts(path: str, text: str) -> None:
    assert extract_facts(path, text) == []


def test_values_of_the_wrong_type_are_skipped() -> None:
    odd_pyproject = (
        "[project]\nname = 3\ndependencies = 'fastapi'\nscripts = [1]\n"
        "[tool.ruff]\nline-length = true\n[tool.coverage.report]\nfail_under = 'ninety'\n"
    )
    odd_package = (
        '{"name": ["x"], "scripts": {"test": 3, "build": ""}, "engines": "node", "dependencies": []}'
    )

    assert texts("pyproject.toml", text=odd_pyproject) == [
        "The project uses FastAPI (from pyproject.toml).",
        "The project lints with Ruff (from pyproject.toml).",
    ]
    assert texts("package.json", text=odd_package) == []


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


def test_an_unterminated_graphmem_section_runs_to_the_end() -> None:
    text = "- Never log secrets.\n<!-- graphmem:start -->\n- Always call graphmem_recall first.\n"

    assert texts("AGENTS.md", text=text) == ["Directive from AGENTS.md: never log secrets."]


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


@settings(max_examples=60, deadline=None)
@given(path=st.sampled_from([*SAMPLE_FILES, ".cursorrules", "README.rst"]), text=st.text(max_size=400))
def test_extract_facts_never_raises(path: str, text: str) -> None:
    found = extract_facts(path, text)

    assert len({f.key for f in found}) == len(found)


@settings(max_examples=60, deadline=None)
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


@pytest.mark.parametrize("path", ["AGENTS.md", "README.md", "docs/x.md", "go.mod"])
def test_huge_or_adversarial_input_stays_fast(path: str) -> None:
    hostile = "# " + " " * 100_000 + "#x\n" + "**a " * 50_000 + "\n" + "`" * 100_000 + "\n- " + "[" * 100_000

    started = time.perf_counter()
    extract_facts(path, hostile * 3)

    assert time.perf_counter() - started < 1.0
