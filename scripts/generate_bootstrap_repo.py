"""Generate the repositories ``graphmem bench bootstrap`` is measured on (docs/benchmarks.md).

    .venv/bin/python scripts/generate_bootstrap_repo.py /tmp/generated [--packages 30]
        [--modules 100] [--commits 300] [--language python|c]

Python (the default): ``--packages`` packages of ``--modules`` modules each, plus each
package's ``__init__.py`` (30 × 100 + 30 = 3,030 files by default). Every module has three
imports of other modules' functions, ten functions with docstrings that call each other and
the imported ones, and a class of five methods.

C: ``src/pkgN/`` folders of ``--modules`` pairs of ``modM.c`` and ``modM.h``, and one
``src/common/util.h`` (30 × 100 × 2 + 1 = 6,001 files). Every ``.c`` file includes six
headers by their name only (``#include "mod7.h"``, which every folder has: a C project's
usual ambiguity) and ``common/util.h``, and defines eight functions that call the headers'.

The repository is a git repository with history: a first commit of every file, then
``--commits`` commits each editing a few modules (a line added after their first comment),
by a handful of authors, on fixed dates: the same arguments give the same repository, commit
hashes included.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
from pathlib import Path

FUNCTIONS = 10
METHODS = 5
IMPORTS = 3
FILES_PER_COMMIT = 4
AUTHORS = ("Ada Byron", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov")
EPOCH = 1_700_000_000  # the first commit's date; each next commit an hour later


def module_source(package: int, module: int, packages: int, modules: int, rng: random.Random) -> str:
    """One module: its imports, functions and class (see the module doc)."""
    lines = [f'"""Module {module} of package {package}."""', ""]
    imported = []
    for _ in range(IMPORTS):
        other_package, other_module = rng.randrange(packages), rng.randrange(modules)
        if (other_package, other_module) == (package, module):
            other_module = (other_module + 1) % modules
        name = f"f{rng.randrange(FUNCTIONS)}"
        alias = f"{name}_{other_package}_{other_module}"
        lines.append(f"from pkg{other_package}.mod{other_module} import {name} as {alias}")
        imported.append(alias)
    lines.append("")
    for index in range(FUNCTIONS):
        callee = imported[index % IMPORTS] if index % 2 else f"f{(index + 1) % FUNCTIONS}"
        lines += [
            "",
            f"def f{index}(value: int, depth: int = 0) -> int:",
            f'    """Step {index} of package {package}, module {module}: the value after this step."""',
            "    if depth > 3:",
            f"        return value + {index}",
            f"    return {callee}(value * {index + 2} % 97, depth + 1)",
            "",
        ]
    lines += ["", f"class Worker{module}:", f'    """The worker of module {module}."""', ""]
    for index in range(METHODS):
        lines += [
            f"    def step{index}(self, value: int) -> int:",
            f"        following = self.step{(index + 1) % METHODS}(value - 1)",
            f"        return f{index}(value) + following if value > 0 else 0",
            "",
        ]
    return "\n".join(lines) + "\n"


C_FUNCTIONS = 8
C_INCLUDES = 6


def c_source(package: int, module: int, modules: int) -> str:
    """One C module: its includes and functions (see the module doc)."""
    lines = [f"/* Module {module} of folder {package}. */"]
    lines += [f'#include "mod{(module + k) % modules}.h"' for k in range(C_INCLUDES)]
    lines += ['#include "common/util.h"', ""]
    for index in range(C_FUNCTIONS):
        callee = f"f{(module + 1) % modules}_{index}"
        lines += [
            f"int f{module}_{index}(int value) {{",
            f"    return util_add(value, {index}) + {callee}(value);",
            "}",
        ]
    return "\n".join(lines) + "\n"


def write_c_tree(root: Path, packages: int, modules: int) -> list[Path]:
    """Every folder's modules and headers under ``root/src``; the ``.c`` files' paths."""
    (root / "src" / "common").mkdir(parents=True, exist_ok=True)
    (root / "src" / "common" / "util.h").write_text("/* Shared helpers. */\nint util_add(int a, int b);\n")
    written = []
    for package in range(packages):
        folder = root / "src" / f"pkg{package}"
        folder.mkdir(parents=True, exist_ok=True)
        for module in range(modules):
            header = "".join(f"int f{module}_{index}(int value);\n" for index in range(C_FUNCTIONS))
            (folder / f"mod{module}.h").write_text(f"/* Module {module}'s functions. */\n{header}")
            path = folder / f"mod{module}.c"
            path.write_text(c_source(package, module, modules))
            written.append(path)
    return written


def write_tree(root: Path, packages: int, modules: int, rng: random.Random) -> list[Path]:
    """Every package and module under ``root``; the modules' paths."""
    written = []
    for package in range(packages):
        folder = root / f"pkg{package}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text(f'"""Package {package}."""\n')
        for module in range(modules):
            path = folder / f"mod{module}.py"
            path.write_text(module_source(package, module, packages, modules, rng))
            written.append(path)
    return written


def git(root: Path, *args: str, when: int, author: str) -> None:
    email = author.lower().replace(" ", ".") + "@example.com"
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": author,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": author,
        "GIT_COMMITTER_EMAIL": email,
        "GIT_AUTHOR_DATE": f"{when} +0000",
        "GIT_COMMITTER_DATE": f"{when} +0000",
    }
    subprocess.run(["git", "-C", str(root), *args], check=True, env=env, stdout=subprocess.DEVNULL)


def generate(
    root: Path, *, packages: int, modules: int, commits: int, seed: int = 42, language: str = "python"
) -> None:
    rng = random.Random(seed)
    if root.exists() and any(root.iterdir()):
        raise SystemExit(f"{root} is not empty: give a new directory.")
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    written = (
        write_c_tree(root, packages, modules) if language == "c" else write_tree(root, packages, modules, rng)
    )
    first_comment_end = "*/\n" if language == "c" else '"""\n'
    marker = "// change {}" if language == "c" else "# change {}"
    git(root, "add", "-A", when=EPOCH, author=AUTHORS[0])
    git(root, "commit", "-q", "-m", "The generated packages", when=EPOCH, author=AUTHORS[0])
    for number in range(1, commits + 1):
        edited = rng.sample(written, min(FILES_PER_COMMIT, len(written)))
        for path in edited:
            text = path.read_text()
            path.write_text(
                text.replace(first_comment_end, f"{first_comment_end}{marker.format(number)}\n", 1)
            )
        author = AUTHORS[number % len(AUTHORS)]
        when = EPOCH + number * 3600
        git(root, "add", *(str(p.relative_to(root)) for p in edited), when=when, author=author)
        names = ", ".join(p.relative_to(root).as_posix() for p in edited)
        git(root, "commit", "-q", "-m", f"Change {number}: {names}", when=when, author=author)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("path", type=Path, help="a new (or empty) directory")
    parser.add_argument("--packages", type=int, default=30)
    parser.add_argument("--modules", type=int, default=100, help="modules per package")
    parser.add_argument("--commits", type=int, default=300, help="commits after the first")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--language", choices=("python", "c"), default="python")
    args = parser.parse_args(argv)
    if args.packages < 1 or args.modules < 2 or args.commits < 0:
        parser.error("--packages ≥ 1, --modules ≥ 2 and --commits ≥ 0")
    generate(
        args.path,
        packages=args.packages,
        modules=args.modules,
        commits=args.commits,
        seed=args.seed,
        language=args.language,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
