"""The example output in ``graphmem bootstrap --help`` is what a bootstrap prints: each of its
lines has the shape of a line a real run prints (in process, on the in-memory store), so the help
cannot drift from the report again (it had kept a first line and a ``skipped:`` line the report
no longer printed, and no ``; N imports``)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py

NUMBER = re.compile(r"\d[\d,.]*")


def shape(line: str) -> tuple[str, ...]:
    """What a report line says, whatever it counts or names: each of its ``;`` clauses by its
    label (the words before its ``:``, or the whole clause), numbers as ``N``."""
    return tuple(NUMBER.sub("N", clause.split(":")[0]).strip() for clause in line.split(";"))


def help_example(help_text: str) -> list[str]:
    """The lines the help shows under ``$ graphmem bootstrap``, up to the first blank line."""
    lines = help_text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.strip() == "$ graphmem bootstrap") + 1
    example: list[str] = []
    for line in lines[start:]:
        if not line.strip():
            break
        example.append(line.strip())
    return example


def a_small_repository(work: Path) -> None:
    """Two commits, a README with a fact, code that calls and imports, a generated and a
    vendored file: a repository whose report has every line the help shows."""

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=work, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "dev@example.com")
    git("config", "user.name", "Dev")
    (work / "README.md").write_text("# Demo\n\nWe use ruff for linting.\n", "utf-8")
    calc = "def add(a, b):\n    return a + b\n\n\ndef twice(x):\n    return add(x, x)\n"
    (work / "calc.py").write_text(calc, "utf-8")
    git("add", "-A")
    git("commit", "-q", "-m", "calc: add and twice")
    (work / "app.py").write_text("from calc import twice\n\n\ndef main():\n    return twice(2)\n", "utf-8")
    (work / "api_pb2.py").write_text("X = 1\n", "utf-8")
    (work / "vendor").mkdir()
    (work / "vendor" / "lib.py").write_text("Y = 2\n", "utf-8")
    git("add", "-A")
    git("commit", "-q", "-m", "app: the entry point")


def test_every_line_of_the_help_example_has_the_shape_of_a_line_a_bootstrap_prints(
    invoke: Invoke, tmp_path: Path
) -> None:
    a_small_repository(tmp_path / "work")

    help_text = invoke("bootstrap", "--help").stdout
    ran = invoke("bootstrap", str(tmp_path / "work"))

    assert ran.exit_code == 0, ran.output
    printed = {shape(line) for line in ran.stdout.splitlines() if line.strip()}
    example = help_example(help_text)
    assert len(example) >= 4, help_text
    unlike = [line for line in example if shape(line) not in printed]
    assert unlike == [], f"bootstrap --help shows lines no bootstrap prints; it printed:\n{ran.stdout}"
