"""`graphmem link --kind supersedes` refuses a link that would close a cycle, with exit 2 and the fix."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

Invoke = Callable[..., Result]  # the ``invoke`` fixture of conftest.py


def test_a_supersedes_link_that_closes_a_cycle_exits_2_and_says_how_to_fix_it(invoke: Invoke) -> None:
    a = invoke("remember", "-c", "decision", "Use ruff for linting").stdout.strip()
    b = invoke("remember", "The staging db is read-only on Mondays").stdout.strip()
    assert invoke("link", a, b, "--kind", "supersedes").exit_code == 0

    refused = invoke("link", b, a, "--kind", "supersedes")

    assert refused.exit_code == 2, refused.output
    assert f"{a} already supersedes {b}" in refused.stderr
    assert f"graphmem unlink {a} {b} --kind supersedes" in refused.stderr
    assert a in invoke("recall", "ruff").stdout  # still current: nothing was stored


def test_an_automatic_supersession_quotes_the_older_memory_and_names_the_undo(invoke: Invoke) -> None:
    older = invoke("remember", "-c", "preference", "Prefer yarn over npm").stdout.strip()

    newer = invoke("remember", "-c", "preference", "Prefer pnpm over npm")

    [line] = [line for line in newer.stderr.splitlines() if line.startswith("supersedes")]
    assert line.startswith(f'supersedes {older} "Prefer yarn over npm" (a newer one on its subject)')
    undo = line.split("`")[1]
    assert undo.startswith("graphmem undo evt_")
    assert invoke(*undo.split()[1:]).exit_code == 0
    assert older in invoke("recall", "yarn").stdout  # current again


def test_remember_json_gives_the_supersession_with_the_older_text_and_its_undo(invoke: Invoke) -> None:
    older = invoke("remember", "-c", "preference", "Prefer yarn over npm").stdout.strip()

    answer = json.loads(invoke("remember", "-c", "preference", "Prefer pnpm over npm", "--json").stdout)

    [done] = answer["supersessions"]
    assert answer["superseded"] == [older]
    assert (done["memory_id"], done["text"], done["automatic"]) == (older, "Prefer yarn over npm", True)
    assert invoke("undo", done["event_id"]).exit_code == 0
    assert older in invoke("recall", "yarn").stdout  # current again


def test_two_preferences_about_one_file_both_stay(invoke: Invoke, tmp_path: Path) -> None:
    checkout = tmp_path / "work"  # the project ``invoke`` runs in, made a repository with the file
    (checkout / "lib").mkdir()
    (checkout / "lib" / "response.js").write_text("module.exports = {}\n", "utf-8")
    subprocess.run(["git", "init", "-q"], cwd=checkout, check=True)
    older = invoke("remember", "-c", "preference", "Prefer res.sendStatus() over res.status().send() for "
                   "bare status codes in lib/response.js").stdout.strip()  # fmt: skip

    newer = invoke("remember", "-c", "preference", "Prefer res.json() over res.send() when responding "
                   "with objects in lib/response.js handlers")  # fmt: skip

    assert "about: lib/response.js" in newer.stderr and "supersedes" not in newer.stderr
    assert older in invoke("recall", "how should I send a bare status code").stdout
