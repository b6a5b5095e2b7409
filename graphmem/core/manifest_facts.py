"""What a repository's manifests say: stack, versions, scripts and tools, as facts and procedures.

One reader, ``read_manifest``, over one table per manifest (``MANIFESTS``): how its text
parses (TOML, JSON, go.mod's lines) and its ``Rule``s. A rule is one finding, keyed by
*what it is* (``stack``, ``script-test``), so a new dependency or a changed script
updates the same memory: a sentence template and how to read each of its values from
the parsed manifest. A rule whose first value (its subject) is empty finds nothing, and
so does a value of the wrong type: invalid or unexpected content yields fewer findings,
never an exception. A new manifest is a new table; a new finding, a new row.
``project_facts.extract_facts`` turns the findings into ``ProjectFact``s.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from graphmem.core.models import Category
from graphmem.core.text import clip, names_phrase

FACT, DIRECTIVE, PROCEDURE = Category.FACT.value, Category.DIRECTIVE.value, Category.PROCEDURE.value

Data = dict[str, Any]  # a parsed manifest
Found = tuple[str, str, str]  # (category, slug, text)
Value = Callable[[Data], str]  # one value of a finding's sentence; "" when the manifest has none
MAX_STACK_NAMES = 8
MAX_VALUE_CHARS = 200
# Of a list a finding joins (pytest's testpaths, its addopts as a list): a manifest of 100,000
# test paths made one fact of megabytes, which the store keeps and a later edit refuses.
MAX_JOINED_ITEMS = 10
MAX_JOINED_CHARS = 2 * MAX_VALUE_CHARS
# No line length or percentage is larger; an int past a float's range made "{:g}" raise.
MAX_NUMBER = 1e15

# Display names of well-known libraries; they are listed first in "The project uses ...".
# fmt: off
_PYTHON_LIBRARIES = {
    "fastapi": "FastAPI", "django": "Django", "flask": "Flask", "starlette": "Starlette",
    "litestar": "Litestar", "sanic": "Sanic", "tornado": "Tornado", "aiohttp": "aiohttp",
    "pyramid": "Pyramid", "djangorestframework": "Django REST framework", "sqlalchemy": "SQLAlchemy",
    "sqlmodel": "SQLModel", "alembic": "Alembic", "pydantic": "Pydantic", "celery": "Celery",
    "click": "Click", "typer": "Typer", "numpy": "NumPy", "pandas": "pandas", "polars": "Polars",
    "torch": "PyTorch", "tensorflow": "TensorFlow", "scikit-learn": "scikit-learn", "streamlit": "Streamlit",
    "langchain": "LangChain", "httpx": "HTTPX", "requests": "Requests", "psycopg": "psycopg",
    "psycopg2": "psycopg2", "asyncpg": "asyncpg", "strawberry-graphql": "Strawberry", "graphene": "Graphene",
    "uvicorn": "Uvicorn", "gunicorn": "Gunicorn",
}
# fmt: on
# fmt: off
_JS_FRAMEWORKS = {
    "next": "Next.js", "react": "React", "react-dom": "React", "vue": "Vue", "nuxt": "Nuxt",
    "svelte": "Svelte", "@sveltejs/kit": "SvelteKit", "@angular/core": "Angular", "express": "Express",
    "fastify": "Fastify",
    "koa": "Koa", "@nestjs/core": "NestJS", "hono": "Hono", "@remix-run/react": "Remix", "astro": "Astro",
    "solid-js": "Solid", "electron": "Electron", "react-native": "React Native", "expo": "Expo",
    "@prisma/client": "Prisma", "prisma": "Prisma", "typeorm": "TypeORM", "sequelize": "Sequelize",
    "mongoose": "Mongoose", "drizzle-orm": "Drizzle", "graphql": "GraphQL", "@apollo/client": "Apollo Client",
    "@apollo/server": "Apollo Server", "redux": "Redux", "@reduxjs/toolkit": "Redux Toolkit",
    "@tanstack/react-query": "TanStack Query", "tailwindcss": "Tailwind CSS", "socket.io": "Socket.IO",
    "zod": "Zod", "@trpc/server": "tRPC", "three": "three.js", "d3": "D3", "jquery": "jQuery",
}
# fmt: on
# fmt: off
_JS_TOOLS = {
    "typescript": "TypeScript", "vite": "Vite", "webpack": "webpack", "esbuild": "esbuild",
    "rollup": "Rollup", "jest": "Jest", "vitest": "Vitest", "mocha": "Mocha",
    "@playwright/test": "Playwright", "cypress": "Cypress", "eslint": "ESLint", "prettier": "Prettier",
    "@biomejs/biome": "Biome", "storybook": "Storybook", "turbo": "Turborepo", "nx": "Nx",
    "@babel/core": "Babel",
}
# fmt: on
_SCRIPT_PURPOSES = {
    "test": "Run the tests",
    "build": "Build the project",
    "lint": "Run the linter",
    "typecheck": "Type-check the code",
    "format": "Format the code",
    "dev": "Start the development server",
    "start": "Start the app",
}
_PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
_PEP508_NAME_RE = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True, slots=True)
class Rule:
    """One finding: ``template`` formatted with its ``values`` and the manifest's ``origin``
    ("from web/package.json") and ``where`` (" in `web/`" for a manifest in a folder)."""

    category: str
    slug: str
    template: str
    values: Mapping[str, Value]  # the first one is the subject: no subject, no finding


@dataclass(frozen=True, slots=True)
class Manifest:
    parse: Callable[[str], Data | None]  # None: not this kind of manifest, or invalid
    rules: tuple[Rule, ...]


def read_manifest(name: str, source: str, text: str) -> list[Found] | None:
    """What the manifest ``name`` (a key of ``MANIFESTS``) at ``source`` says, rule by rule;
    None when ``text`` does not parse as one (invalid JSON or TOML, no go.mod ``module``)."""
    manifest = MANIFESTS[name]
    data = manifest.parse(text)
    if data is None:
        return None
    folder = source.rpartition("/")[0]
    context = {"origin": f"from {source}", "where": f" in `{folder}/`" if folder else ""}
    found: list[Found] = []
    for rule in manifest.rules:
        values = {key: read(data) for key, read in rule.values.items()}
        if next(iter(values.values())):
            found.append((rule.category, rule.slug, rule.template.format(**values, **context)))
    return found


# -- reading values --------------------------------------------------------------------------


def _get(data: Data, path: str) -> Any:
    """The value at a dotted ``path`` ("tool.ruff.line-length"), or None."""
    value: Any = data
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _strings(data: Data, *paths: str) -> list[str]:
    """The first of ``paths`` holding strings (a string or a list of them), clipped."""
    for path in paths:
        value = _get(data, path)
        items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        found = [clip(item, MAX_VALUE_CHARS) for item in items if isinstance(item, str) and item.strip()]
        if found:
            return found
    return []


def _keys(data: Data, *paths: str) -> list[str]:
    """The keys of the tables at ``paths``, in order, once each."""
    tables = [_get(data, path) for path in paths]
    return list(dict.fromkeys(key for table in tables if isinstance(table, dict) for key in table))


def string(*paths: str, form: str = "{}", width: int = MAX_VALUE_CHARS) -> Value:
    """The first non-blank string at ``paths``, clipped to ``width``, in ``form``."""

    def read(data: Data) -> str:
        for path in paths:
            value = _get(data, path)
            if isinstance(value, str) and clip(value, width):
                return form.format(clip(value, width))
        return ""

    return read


def about(*paths: str) -> Value:
    """``": <description>"`` (the first at ``paths``, without its final full stop), or ""."""
    description = string(*paths)
    return lambda data: f": {value.rstrip('.')}" if (value := description(data)) else ""


def number(path: str, form: str) -> Value:
    """The number at ``path`` (not a boolean, nor past ``MAX_NUMBER``) in ``form`` (``"{:g}"``)."""

    def read(data: Data) -> str:
        value = _get(data, path)
        if not isinstance(value, int | float) or isinstance(value, bool):
            return ""
        # Compared exactly, an int of any size too: inf and nan are never below it
        return form.format(value) if abs(value) < MAX_NUMBER else ""

    return read


def flag(path: str, form: str) -> Value:
    """``form`` when ``path`` holds ``true``."""
    return lambda data: form if _get(data, path) is True else ""


def present(path: str) -> Value:
    """A subject for rules that apply when ``path`` exists at all (a ``[tool.mypy]`` table)."""
    return lambda data: path if _get(data, path) is not None else ""


def listed(*paths: str, limit: int) -> Value:
    """The strings at the first of ``paths`` that has some, as "a, b and c" (``limit`` named)."""
    return lambda data: names_phrase(_strings(data, *paths), limit)


def joined(*paths: str, separator: str, form: str, limit: int = MAX_JOINED_ITEMS) -> Value:
    """The first ``limit`` strings at the first of ``paths`` that has some, joined (clipped to
    ``MAX_JOINED_CHARS``), in ``form``."""
    return lambda data: (
        form.format(clip(separator.join(found[:limit]), MAX_JOINED_CHARS))
        if (found := _strings(data, *paths))
        else ""
    )


def parts(*values: Value, separator: str = ", ", form: str = "{}") -> Value:
    """The non-empty ``values`` joined, in ``form``; "" when all are empty."""
    return lambda data: (
        form.format(separator.join(found)) if (found := [v for r in values if (v := r(data))]) else ""
    )


def keys(*paths: str) -> Callable[[Data], list[str]]:
    return lambda data: _keys(data, *paths)


def stack(
    names: Callable[[Data], list[str]],
    known: Mapping[str, str] = {},
    *,
    python: bool = False,
    width: int = 60,
) -> Value:
    """Well-known libraries first (most defining first), by their usual names, then the others as declared."""

    def read(data: Data) -> str:
        declared = names(data)
        normal = [re.sub(r"[-_.]+", "-", n).lower() if python else n for n in declared]
        order = {name: index for index, name in enumerate(known.values())}
        famous = sorted((known[k] for k in normal if k in known), key=order.__getitem__)
        others = [clip(n, width) for n, k in zip(declared, normal, strict=True) if k not in known]
        return names_phrase(list(dict.fromkeys(famous + others)), MAX_STACK_NAMES)

    return read


def only_known(names: Callable[[Data], list[str]], known: Mapping[str, str]) -> Value:
    """The well-known ones among ``names``, by their usual names, in the order declared."""
    return lambda data: names_phrase(
        list(dict.fromkeys(known[n] for n in names(data) if n in known)), MAX_STACK_NAMES
    )


# -- what only one manifest has ----------------------------------------------------------------


def _python_dependencies(data: Data) -> list[str]:
    """PEP 508 names of ``[project] dependencies`` and Poetry's dependency table (without python)."""
    names = [m.group(1) for d in _strings(data, "project.dependencies") if (m := _PEP508_NAME_RE.match(d))]
    return names + [n for n in _keys(data, "tool.poetry.dependencies") if n.lower() != "python"]


def _installed_commands(data: Data) -> str:
    """``"command `x` (pkg.cli:main)"`` from ``[project.scripts]`` or Poetry's scripts."""
    tables = (_get(data, path) for path in ("project.scripts", "tool.poetry.scripts"))
    scripts: dict[str, Any] = next((t for t in tables if isinstance(t, dict) and t), {})
    commands = [f"`{clip(n, 60)}` ({clip(t, 100)})" for n, t in scripts.items() if isinstance(t, str)]
    noun = "commands" if len(commands) > 1 else "command"
    return f"{noun} {names_phrase(commands, 5)}" if commands else ""


def _js_language(data: Data) -> str:
    return (
        "TypeScript"
        if "typescript" in _keys(data, "dependencies", "peerDependencies", "devDependencies")
        else "JavaScript"
    )


def _package_manager(data: Data) -> str:
    """``pnpm`` from ``"packageManager": "pnpm@9.1.0+sha512.…"``; npm when none is named."""
    manager = string("packageManager")(data).partition("@")[0]
    return manager if manager in _PACKAGE_MANAGERS else "npm"


def _declared_manager(data: Data) -> str:
    return _package_manager(data) if string("packageManager")(data) else ""


def _manager_version(data: Data) -> str:
    version = string("packageManager")(data).partition("@")[2]
    return f" {version.split('+')[0]}" if version else ""


def _engines(data: Data) -> str:
    engines = _get(data, "engines")
    pairs = (
        [f"{clip(k, 60)} {clip(v, 60)}" for k, v in engines.items() if isinstance(v, str)]
        if isinstance(engines, dict)
        else []
    )
    return names_phrase(pairs, 5)


# -- parsing ----------------------------------------------------------------------------------


def _toml(text: str) -> Data | None:
    try:
        return tomllib.loads(text)
    except (ValueError, RecursionError):  # TOMLDecodeError is a ValueError
        return None


def _json(text: str) -> Data | None:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _go_mod(text: str) -> Data | None:
    """``module``, ``go``, ``toolchain`` and the direct ``require``s; no ``module`` line, no go.mod."""
    data: Data = {"require": []}
    in_require = False
    for raw in text.splitlines():
        words = raw.split("//", 1)[0].split()
        direct = "// indirect" not in raw
        if in_require:
            in_require = words != [")"]
            if in_require and len(words) >= 2 and direct:
                data["require"].append(words[0])
        elif words[:2] == ["require", "("] or words[:1] == ["require("]:
            in_require = True
        elif len(words) >= 3 and words[0] == "require" and direct:
            data["require"].append(words[1])
        elif len(words) == 2 and words[0] != "require":
            data.setdefault(words[0], words[1].strip('"'))
    return data if string("module")(data) else None


# -- the manifests: one row per finding, in the order they are reported ------------------------


def rule(category: str, slug: str, template: str, **values: Value) -> Rule:
    return Rule(category, slug, template, values)


def details(*values: Value) -> Value:
    """``": a, b"`` of the non-empty ``values``, or ""."""
    return parts(*values, form=": {}")


_TESTPATHS = ("tool.pytest.ini_options.testpaths", "tool.pytest.testpaths")
_ADDOPTS = ("tool.pytest.ini_options.addopts", "tool.pytest.addopts")
_SCRIPTS = tuple(
    rule(
        PROCEDURE,
        f"script-{script}",
        purpose + " with `{manager} run " + script + "`{where} (runs `{body}`; {origin}).",
        body=string(f"scripts.{script}", width=120),
        manager=_package_manager,
    )
    for script, purpose in _SCRIPT_PURPOSES.items()
)

# fmt: off
_PYPROJECT = Manifest(_toml, (
    rule(FACT, "project", "The Python project {name}{about} ({origin}).",
         name=string("project.name", "tool.poetry.name"),
         about=about("project.description", "tool.poetry.description")),
    rule(FACT, "python", "The project requires Python {python} ({origin}).",
         python=string("project.requires-python", "tool.poetry.dependencies.python")),
    rule(FACT, "stack", "The project uses {stack} ({origin}).",
         stack=stack(_python_dependencies, _PYTHON_LIBRARIES, python=True)),
    rule(FACT, "scripts", "The project installs the {commands} ({origin}).", commands=_installed_commands),
    rule(FACT, "build", "The project builds with the {backend} backend ({origin}).",
         backend=string("build-system.build-backend")),
    rule(FACT, "pytest", "Tests run with pytest{details} ({origin}).",
         tool=present("tool.pytest"),
         details=details(joined(*_TESTPATHS, separator=", ", form="tests in {}"),
                         joined(*_ADDOPTS, separator=" ", form="options `{}`"))),
    rule(FACT, "ruff", "The project lints with Ruff{details} ({origin}).",
         tool=present("tool.ruff"),
         details=details(number("tool.ruff.line-length", "line length {:g}"),
                         string("tool.ruff.target-version", form="target {}"),
                         joined("tool.ruff.lint.select", "tool.ruff.select", separator=", ", form="rules {}",
                                limit=12))),
    rule(FACT, "black", "The project formats code with Black{details} ({origin}).",
         tool=present("tool.black"), details=details(number("tool.black.line-length", "line length {:g}"))),
    rule(FACT, "isort", "Imports are sorted with isort{details} ({origin}).",
         tool=present("tool.isort"), details=details(string("tool.isort.profile", form="profile {}"))),
    rule(FACT, "mypy", "The project type-checks with mypy{strict} ({origin}).",
         tool=present("tool.mypy"), strict=flag("tool.mypy.strict", " in strict mode")),
    rule(DIRECTIVE, "coverage",
         "Test coverage must stay at or above {percent}% (coverage fail_under, {origin}).",
         percent=number("tool.coverage.report.fail_under", "{:g}")),
))

_PACKAGE_JSON = Manifest(_json, (
    rule(FACT, "project", "The {language} package {name}{about} ({origin}).",
         name=string("name"), language=_js_language, about=about("description")),
    rule(FACT, "package-manager", "The project uses {manager}{version} as its package manager ({origin}).",
         manager=_declared_manager, version=_manager_version),
    rule(FACT, "engines", "The project requires {engines} ({origin}).", engines=_engines),
    rule(FACT, "workspaces", "The project's workspaces are {workspaces} ({origin}).",
         workspaces=listed("workspaces", "workspaces.packages", limit=10)),
    *_SCRIPTS,
    rule(FACT, "stack", "The project uses {stack} ({origin}).",
         stack=stack(keys("peerDependencies", "dependencies"), _JS_FRAMEWORKS)),
    rule(FACT, "tools", "The project's development tools include {tools} ({origin}).",
         tools=only_known(keys("devDependencies", "peerDependencies", "dependencies"), _JS_TOOLS)),
))

_GO_MOD = Manifest(_go_mod, (
    rule(FACT, "module", "The project is the Go module {module}{go}{toolchain} ({origin}).",
         module=string("module"), go=string("go", form=", for Go {}"),
         toolchain=string("toolchain", form=" with the {} toolchain")),
    rule(FACT, "stack", "The project uses {stack} ({origin}).",
         stack=stack(lambda data: _strings(data, "require"), width=100)),  # module paths are long
))

_CARGO_TOML = Manifest(_toml, (
    rule(FACT, "crate", "The Rust crate {name}{about} ({origin}).",
         name=string("package.name"), about=about("package.description")),
    rule(FACT, "rust", "The project uses {rust} ({origin}).",
         rust=parts(string("package.edition", "workspace.package.edition", form="Rust edition {}"),
                    string("package.rust-version", "workspace.package.rust-version", form="Rust {} or newer"),
                    separator=" and ")),
    rule(FACT, "stack", "The project uses {stack} ({origin}).",
         stack=stack(keys("dependencies", "workspace.dependencies"))),
    rule(FACT, "workspace", "The Cargo workspace has the members {members} ({origin}).",
         members=listed("workspace.members", limit=10)),
))

# fmt: on

MANIFESTS: dict[str, Manifest] = {
    "pyproject.toml": _PYPROJECT,
    "package.json": _PACKAGE_JSON,
    "go.mod": _GO_MOD,
    "Cargo.toml": _CARGO_TOML,
}
