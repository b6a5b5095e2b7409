"""What a repository's manifests say: stack, versions, scripts and tools, as facts and procedures.

Pure functions over one manifest's path and text (``pyproject.toml``, ``package.json``,
``go.mod``, ``Cargo.toml``). Each finding is keyed by *what it is* (``stack``,
``script-test``), so a new dependency or a changed script updates the same memory;
``project_facts.extract_facts`` turns the findings into ``ProjectFact``s. Invalid or
unexpected content yields fewer findings, never an exception.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from typing import Any

from graphmem.core.models import Category
from graphmem.core.text import clip, names_phrase

FACT, DIRECTIVE, PROCEDURE = Category.FACT.value, Category.DIRECTIVE.value, Category.PROCEDURE.value

_Found = tuple[str, str, str]  # (category, slug, text)
MAX_STACK_NAMES = 8

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


def _pyproject(source: str, text: str) -> list[_Found]:
    """Name and description, Python version, dependencies, commands, build backend, tool conventions."""
    data = _toml(text)
    if data is None:
        return []
    project, tool = _table(data, "project"), _table(data, "tool")
    poetry = _table(tool, "poetry")
    origin = f"from {source}"
    found: list[_Found] = []
    name = _string(project, "name") or _string(poetry, "name")
    description = _string(project, "description") or _string(poetry, "description")
    if name:
        about = f": {description.rstrip('.')}" if description else ""
        found.append((FACT, "project", f"The Python project {name}{about} ({origin})."))
    python = _string(project, "requires-python") or _string(_table(poetry, "dependencies"), "python")
    if python:
        found.append((FACT, "python", f"The project requires Python {python} ({origin})."))
    names = [m.group(1) for d in _strings(project, "dependencies") if (m := _PEP508_NAME_RE.match(d))]
    names += [n for n in _table(poetry, "dependencies") if n.lower() != "python"]
    if names:
        found.append(
            (FACT, "stack", f"The project uses {_stack(names, _PYTHON_LIBRARIES, python=True)} ({origin}).")
        )
    scripts = _table(project, "scripts") or _table(poetry, "scripts")
    commands = [
        f"`{clip(n, 60)}` ({clip(target, 100)})" for n, target in scripts.items() if isinstance(target, str)
    ]
    if commands:
        noun = "commands" if len(commands) > 1 else "command"
        found.append(
            (FACT, "scripts", f"The project installs the {noun} {names_phrase(commands, 5)} ({origin}).")
        )
    backend = _string(_table(data, "build-system"), "build-backend")
    if backend:
        found.append((FACT, "build", f"The project builds with the {backend} backend ({origin})."))
    return found + _python_tools(tool, origin)


def _python_tools(tool: dict[str, Any], origin: str) -> list[_Found]:
    """Conventions from the [tool.pytest], ruff, black, isort, mypy and coverage tables."""
    found: list[_Found] = []
    if "pytest" in tool:
        pytest = _table(_table(tool, "pytest"), "ini_options") or _table(tool, "pytest")
        paths, options = _strings(pytest, "testpaths"), " ".join(_strings(pytest, "addopts"))
        details = ([f"tests in {', '.join(paths)}"] if paths else []) + (
            [f"options `{options}`"] if options else []
        )
        found.append((FACT, "pytest", f"Tests run with pytest{_colon(details)} ({origin})."))
    if "ruff" in tool:
        ruff = _table(tool, "ruff")
        length, target = _number(ruff, "line-length"), _string(ruff, "target-version")
        rules = _strings(_table(ruff, "lint"), "select") or _strings(ruff, "select")
        details = [f"line length {length:g}"] if length is not None else []
        details += ([f"target {target}"] if target else []) + (
            [f"rules {', '.join(rules[:12])}"] if rules else []
        )
        found.append((FACT, "ruff", f"The project lints with Ruff{_colon(details)} ({origin})."))
    if "black" in tool:
        length = _number(_table(tool, "black"), "line-length")
        details = [f"line length {length:g}"] if length is not None else []
        found.append((FACT, "black", f"The project formats code with Black{_colon(details)} ({origin})."))
    if "isort" in tool:
        profile = _string(_table(tool, "isort"), "profile")
        details = [f"profile {profile}"] if profile else []
        found.append((FACT, "isort", f"Imports are sorted with isort{_colon(details)} ({origin})."))
    if "mypy" in tool:
        strict = " in strict mode" if _table(tool, "mypy").get("strict") is True else ""
        found.append((FACT, "mypy", f"The project type-checks with mypy{strict} ({origin})."))
    fail_under = _number(_table(_table(tool, "coverage"), "report"), "fail_under")
    if fail_under is not None:
        text = f"Test coverage must stay at or above {fail_under:g}% (coverage fail_under, {origin})."
        found.append((DIRECTIVE, "coverage", text))
    return found


def _package_json(source: str, text: str) -> list[_Found]:
    """Name and description, package manager, engines, workspaces, scripts, frameworks and tools."""
    data = _json(text)
    if data is None:
        return []
    origin = f"from {source}"
    folder = source.rpartition("/")[0]
    where = f" in `{folder}/`" if folder else ""
    dependencies = {**_table(data, "peerDependencies"), **_table(data, "dependencies")}
    dev = _table(data, "devDependencies")
    found: list[_Found] = []
    name, description = _string(data, "name"), _string(data, "description")
    if name:
        language = "TypeScript" if "typescript" in dependencies or "typescript" in dev else "JavaScript"
        about = f": {description.rstrip('.')}" if description else ""
        found.append((FACT, "project", f"The {language} package {name}{about} ({origin})."))
    manager_spec = _string(data, "packageManager")  # "pnpm@9.1.0+sha512.…"
    manager, _, version = manager_spec.partition("@")
    manager = manager if manager in _PACKAGE_MANAGERS else "npm"
    if manager_spec:
        version = f" {version.split('+')[0]}" if version else ""
        text = f"The project uses {manager}{version} as its package manager ({origin})."
        found.append((FACT, "package-manager", text))
    engines = [f"{k} {v}" for k, v in _table(data, "engines").items() if isinstance(v, str)]
    if engines:
        found.append((FACT, "engines", f"The project requires {names_phrase(engines, 5)} ({origin})."))
    workspaces = _strings(data, "workspaces") or _strings(_table(data, "workspaces"), "packages")
    if workspaces:
        found.append(
            (FACT, "workspaces", f"The project's workspaces are {names_phrase(workspaces, 10)} ({origin}).")
        )
    scripts = _table(data, "scripts")
    for script, purpose in _SCRIPT_PURPOSES.items():
        body = scripts.get(script)
        if isinstance(body, str) and body.strip():
            text = f"{purpose} with `{manager} run {script}`{where} (runs `{clip(body, 120)}`; {origin})."
            found.append((PROCEDURE, f"script-{script}", text))
    if dependencies:
        found.append(
            (FACT, "stack", f"The project uses {_stack(list(dependencies), _JS_FRAMEWORKS)} ({origin}).")
        )
    tools = list(dict.fromkeys(_JS_TOOLS[n] for n in [*dev, *dependencies] if n in _JS_TOOLS))
    if tools:
        text = f"The project's development tools include {names_phrase(tools, MAX_STACK_NAMES)} ({origin})."
        found.append((FACT, "tools", text))
    return found


def _go_mod(source: str, text: str) -> list[_Found]:
    """Module path, Go version and direct requirements; no ``module`` line means no go.mod."""
    single: dict[str, str] = {}  # one-value directives: module, go, toolchain
    requires: list[str] = []
    in_require = False
    for raw in text.splitlines():
        words = raw.split("//", 1)[0].split()
        direct = "// indirect" not in raw
        if in_require:
            in_require = words != [")"]
            if in_require and len(words) >= 2 and direct:
                requires.append(words[0])
        elif words[:2] == ["require", "("] or words[:1] == ["require("]:
            in_require = True
        elif len(words) >= 3 and words[0] == "require" and direct:
            requires.append(words[1])
        elif len(words) == 2:
            single.setdefault(words[0], clip(words[1].strip('"'), 200))
    module, go, toolchain = (single.get(name, "") for name in ("module", "go", "toolchain"))
    if not module:
        return []
    version = f", for Go {go}" if go else ""
    version += f" with the {toolchain} toolchain" if toolchain else ""
    found = [(FACT, "module", f"The project is the Go module {module}{version} (from {source}).")]
    if requires:
        uses = names_phrase([clip(r, 100) for r in dict.fromkeys(requires)], MAX_STACK_NAMES)
        found.append((FACT, "stack", f"The project uses {uses} (from {source})."))
    return found


def _cargo_toml(source: str, text: str) -> list[_Found]:
    """Crate name and description, edition and Rust version, dependencies, workspace members."""
    data = _toml(text)
    if data is None:
        return []
    package, workspace = _table(data, "package"), _table(data, "workspace")
    shared = _table(workspace, "package")
    origin = f"from {source}"
    found: list[_Found] = []
    name, description = _string(package, "name"), _string(package, "description")
    if name:
        about = f": {description.rstrip('.')}" if description else ""
        found.append((FACT, "crate", f"The Rust crate {name}{about} ({origin})."))
    edition = _string(package, "edition") or _string(shared, "edition")
    rust = _string(package, "rust-version") or _string(shared, "rust-version")
    if edition or rust:
        parts = [f"Rust edition {edition}"] if edition else []
        parts += [f"Rust {rust} or newer"] if rust else []
        found.append((FACT, "rust", f"The project uses {' and '.join(parts)} ({origin})."))
    dependencies = list(dict.fromkeys([*_table(data, "dependencies"), *_table(workspace, "dependencies")]))
    if dependencies:
        uses = names_phrase([clip(d, 60) for d in dependencies], MAX_STACK_NAMES)
        found.append((FACT, "stack", f"The project uses {uses} ({origin})."))
    members = _strings(workspace, "members")
    if members:
        text = f"The Cargo workspace has the members {names_phrase(members, 10)} ({origin})."
        found.append((FACT, "workspace", text))
    return found


MANIFESTS: dict[str, Callable[[str, str], list[_Found]]] = {
    "pyproject.toml": _pyproject,
    "package.json": _package_json,
    "go.mod": _go_mod,
    "Cargo.toml": _cargo_toml,
}


def _toml(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except (ValueError, RecursionError):  # TOMLDecodeError is a ValueError
        return None


def _json(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _string(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    return clip(value, 200) if isinstance(value, str) else ""


def _number(data: dict[str, Any], key: str) -> float | None:
    value = data.get(key)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _strings(data: dict[str, Any], key: str) -> list[str]:
    value = data.get(key)
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [clip(item, 200) for item in items if isinstance(item, str) and item.strip()]


def _stack(names: list[str], known: dict[str, str], *, python: bool = False) -> str:
    """Well-known libraries first (most defining first), by their usual names, then the others as declared."""
    keys = [re.sub(r"[-_.]+", "-", n).lower() if python else n for n in names]
    order = {name: index for index, name in enumerate(known.values())}
    famous = sorted((known[k] for k in keys if k in known), key=order.__getitem__)
    others = [clip(n, 60) for n, k in zip(names, keys, strict=True) if k not in known]
    return names_phrase(list(dict.fromkeys(famous + others)), MAX_STACK_NAMES)


def _colon(details: list[str]) -> str:
    return f": {', '.join(details)}" if details else ""
