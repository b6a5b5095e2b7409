"""What a repository's manifests say (samples/repos/facts): one table-driven reader for
pyproject.toml, package.json, go.mod and Cargo.toml, read through ``extract_facts``."""

from __future__ import annotations

import string
from pathlib import Path

import pytest

from graphmem.core.manifest_facts import MANIFESTS
from graphmem.core.project_facts import extract_facts, read_facts

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "repos" / "facts"


def sample(path: str) -> str:
    return (SAMPLES / path).read_text("utf-8")


def texts(path: str, category: str | None = None, text: str | None = None) -> list[str]:
    found = extract_facts(path, sample(path) if text is None else text)
    return [f.text for f in found if category is None or f.category == category]


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
        pytest.param("package.json", "[" * 100_000, id="package.json-100000-brackets"),  # not a 100 KB id
        ("go.mod", "this is not go.mod\n"),
        ("Cargo.toml", "[package]]"),
    ],
)
def test_invalid_manifests_give_no_facts(path: str, text: str) -> None:
    assert extract_facts(path, text) == []


@pytest.mark.parametrize(
    ("path", "text", "found"),
    [
        ("package.json", '{"name": "shop", "engines": {"node": ">= 18"', None),
        ("package.json", "[1, 2]", None),
        ("pyproject.toml", "[project\nname = ", None),
        ("go.mod", "this is not go.mod\n", None),
        ("Cargo.toml", "[package]]", None),
        ("package.json", '{"private": true}', []),
        ("pyproject.toml", "", []),
        ("README.md", "", []),
    ],
)
def test_a_manifest_that_does_not_parse_is_told_apart_from_one_that_says_nothing(
    path: str, text: str, found: list[object] | None
) -> None:
    # bootstrap keeps the facts of the first (what it says is unknown) and archives the second's
    assert read_facts(path, text) == found


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


@pytest.mark.parametrize("number", ["1" + "0" * 400, "inf", "nan"], ids=["past-a-float", "inf", "nan"])
def test_a_number_no_setting_could_hold_is_skipped(number: str) -> None:
    # An integer past a float's range made "{:g}" raise OverflowError, and the pass with it
    pyproject = f"[tool.ruff]\nline-length = {number}\n[tool.coverage.report]\nfail_under = {number}\n"

    assert texts("pyproject.toml", text=pyproject) == ["The project lints with Ruff (from pyproject.toml)."]


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_every_rule_template_names_only_its_values_origin_and_where(name: str) -> None:
    for rule in MANIFESTS[name].rules:
        fields = {field for _, field, _, _ in string.Formatter().parse(rule.template) if field}

        assert fields <= {*rule.values, "origin", "where"}, f"{name} {rule.slug}: {rule.template}"
        assert rule.values, f"{name} {rule.slug} has no subject"


def test_each_manifest_reports_each_slug_once() -> None:
    for name, manifest in MANIFESTS.items():
        slugs = [(rule.category, rule.slug) for rule in manifest.rules]

        assert len(slugs) == len(set(slugs)), name


def test_a_manifests_long_lists_are_named_in_a_few_words() -> None:
    # Every test path, option and engine was named in full: facts of tens of kilobytes
    paths = ", ".join(f'"tests/part{n}"' for n in range(3_000))
    options = ", ".join(f'"-k{n}"' for n in range(3_000))
    pyproject = f"[tool.pytest.ini_options]\ntestpaths = [{paths}]\naddopts = [{options}]\n"
    package = '{"name": "shop", "engines": {"node": "' + "1" * 20_000 + '"}}'

    (pytest_fact,) = texts("pyproject.toml", "fact", pyproject)
    engines = next(t for t in texts("package.json", "fact", package) if t.startswith("The project requires"))

    assert pytest_fact.startswith("Tests run with pytest: tests in tests/part0, tests/part1,")
    assert len(pytest_fact) < 1_000
    assert len(engines) < 200
