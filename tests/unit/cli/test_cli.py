"""The ``graphmem`` command line, run in process against a fresh store with a fake embedder."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from graphmem.cli import main
from graphmem.core.text import MAX_TEXT_CHARS
from graphmem.service.memory import MemoryService

Invoke = Callable[..., Result]
ID_RE = re.compile(r"^mem_[0-9a-f]{16}$")
DECISION = "We decided to use Kuzu as the embedded graph store"


@pytest.fixture
def invoke(tmp_path: Path, in_memory_cli: object) -> Invoke:
    """Runs ``graphmem ARGS`` on a fresh data dir (its in-memory store: conftest.py), outside any
    git project."""
    data_dir = tmp_path / "data"
    project = tmp_path / "work"
    project.mkdir()
    runner = CliRunner()

    def run(*args: str, input: str | None = None, data: Path = data_dir, where: Path = project) -> Result:
        return runner.invoke(main.cli, ["--data-dir", str(data), "--project", str(where), *args], input=input)

    return run


def remember(invoke: Invoke, text: str = DECISION, *options: str) -> str:
    result = invoke("remember", text, *options)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def test_remember_prints_the_new_id(invoke: Invoke) -> None:
    result = invoke("remember", "-c", "decision", DECISION)

    assert result.exit_code == 0, result.output
    assert ID_RE.match(result.stdout.strip())


def test_remember_reads_text_from_stdin_with_a_dash(invoke: Invoke) -> None:
    result = invoke("remember", "-", input=DECISION + "\n")

    shown = json.loads(invoke("show", result.stdout.strip(), "--json").stdout)
    assert shown["text"] == DECISION


def test_remembering_the_same_text_again_reinforces_it(invoke: Invoke) -> None:
    first = remember(invoke, DECISION, "-c", "decision")

    again = invoke("remember", "-c", "decision", DECISION)

    assert again.stdout.strip() == first
    assert f"reinforced existing memory {first}" in again.stderr


def test_remember_inside_a_git_project_is_project_scoped(invoke: Invoke, git_project: str) -> None:
    result = invoke("remember", "The retry policy lives in src/app.py", where=Path(git_project))

    shown = json.loads(invoke("show", result.stdout.strip(), "--json", where=Path(git_project)).stdout)

    assert (shown["scope"], shown["project"]) == ("project", git_project)
    assert [e["name"] for e in shown["entities"]] == ["src/app.py"]


def test_recall_finds_a_remembered_decision(invoke: Invoke) -> None:
    memory_id = remember(invoke, DECISION, "-c", "decision")

    result = invoke("recall", "which graph store did we decide on")

    assert result.exit_code == 0, result.output
    assert f"1. [decision] {DECISION}" in result.stdout
    assert memory_id in result.stdout
    assert "why: " in result.stdout


def test_recall_json_lists_the_hit_with_its_reasons(invoke: Invoke) -> None:
    memory_id = remember(invoke, DECISION, "-c", "decision")

    data = json.loads(invoke("recall", "graph store", "--json").stdout)

    assert {"query", "plan", "hits", "took_ms"} <= data.keys()
    assert data["hits"][0]["id"] == memory_id
    assert data["hits"][0]["why"]["channels"]


def test_recall_of_an_unrelated_query_says_nothing_clears_the_floor(invoke: Invoke) -> None:
    remember(invoke, DECISION, "-c", "decision")

    result = invoke("recall", "banana smoothie recipe")

    assert result.exit_code == 0
    assert "No memories clear the relevance floor for this query." in result.stdout


def test_unknown_category_exits_2_listing_the_categories(invoke: Invoke) -> None:
    result = invoke("remember", "-c", "rumour", DECISION)

    assert result.exit_code == 2
    assert "'rumour' is not one of" in result.stderr
    assert "decision" in result.stderr and "blocker" in result.stderr


def test_category_is_case_insensitive(invoke: Invoke) -> None:
    remember(invoke, DECISION, "-c", "DECISION")

    data = json.loads(invoke("list", "--json").stdout)

    assert data["memories"][0]["category"] == "decision"


def test_empty_text_exits_2_with_one_error_line(invoke: Invoke) -> None:
    result = invoke("remember", "   ")

    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert len(result.stderr.strip().splitlines()) == 1


def test_show_of_an_unknown_id_exits_3(invoke: Invoke) -> None:
    result = invoke("show", "mem_0000000000000000")

    assert result.exit_code == 3
    assert "error: No memory with id" in result.stderr


def test_delete_answered_no_keeps_the_memory(invoke: Invoke) -> None:
    memory_id = remember(invoke)

    result = invoke("delete", memory_id, input="n\n")

    assert result.exit_code == 1
    assert "nothing was deleted" in result.stderr
    assert invoke("show", memory_id).exit_code == 0


def test_delete_with_yes_removes_the_memory(invoke: Invoke) -> None:
    memory_id = remember(invoke)

    result = invoke("delete", memory_id, "--yes")

    assert result.exit_code == 0, result.output
    assert invoke("show", memory_id).exit_code == 3


def test_resolve_on_a_non_blocker_exits_4(invoke: Invoke) -> None:
    memory_id = remember(invoke, DECISION, "-c", "decision")

    result = invoke("resolve", memory_id)

    assert result.exit_code == 4
    assert "not a blocker" in result.stderr


def test_resolve_then_unresolve_a_blocker(invoke: Invoke) -> None:
    memory_id = remember(invoke, "CI fails on arm64 because the kuzu wheel is missing", "-c", "blocker")

    assert invoke("resolve", memory_id).stdout.strip() == f"resolved {memory_id}"
    assert invoke("unresolve", memory_id).stdout.strip() == f"unresolved {memory_id} (now active)"


def test_list_leaves_resolved_blockers_out_unless_asked(invoke: Invoke) -> None:
    memory_id = remember(invoke, "CI fails on arm64 because the kuzu wheel is missing", "-c", "blocker")
    invoke("resolve", memory_id)

    default = json.loads(invoke("list", "--json").stdout)["memories"]
    resolved = json.loads(invoke("list", "--status", "resolved", "--json").stdout)["memories"]

    assert default == []
    assert [m["id"] for m in resolved] == [memory_id]


def test_archive_hides_a_memory_and_restore_brings_it_back(invoke: Invoke) -> None:
    memory_id = remember(invoke)

    invoke("archive", memory_id)
    hidden = json.loads(invoke("list", "--json").stdout)["memories"]
    invoke("restore", memory_id)
    back = json.loads(invoke("list", "--json").stdout)["memories"]

    assert hidden == []
    assert [m["id"] for m in back] == [memory_id]


def test_edit_changes_the_text_and_keeps_the_id(invoke: Invoke) -> None:
    memory_id = remember(invoke)

    invoke("edit", memory_id, "We use Kuzu 0.11.3, pinned, as the graph store")

    assert json.loads(invoke("show", memory_id, "--json").stdout)["text"].startswith("We use Kuzu 0.11.3")


def test_link_then_unlink_two_memories(invoke: Invoke) -> None:
    source = remember(invoke, "Retries use exponential backoff starting at 200 ms")
    target = remember(invoke, "Payments are retried three times before failing")

    linked = invoke("link", source, target, "--kind", "extends")
    links_after_link = json.loads(invoke("show", source, "--json").stdout)["links"]
    unlinked = invoke("unlink", source, target, "--kind", "extends")
    links_after_unlink = json.loads(invoke("show", source, "--json").stdout)["links"]

    assert linked.exit_code == 0 and unlinked.exit_code == 0
    assert [(lk["source"], lk["kind"], lk["target"]) for lk in links_after_link] == [
        (source, "extends", target)
    ]
    assert links_after_unlink == []


def test_unlink_of_a_missing_link_exits_3(invoke: Invoke) -> None:
    source = remember(invoke, "Retries use exponential backoff starting at 200 ms")
    target = remember(invoke, "Payments are retried three times before failing")

    assert invoke("unlink", source, target, "--kind", "related").exit_code == 3


def test_list_json_holds_every_remembered_memory(invoke: Invoke) -> None:
    ids = {remember(invoke, DECISION), remember(invoke, "The staging database is read-only on Mondays")}

    data = json.loads(invoke("list", "--json").stdout)

    assert {m["id"] for m in data["memories"]} == ids


def test_list_filters_by_category(invoke: Invoke) -> None:
    remember(invoke, DECISION, "-c", "decision")
    blocker = remember(invoke, "The staging database is read-only on Mondays", "-c", "blocker")

    data = json.loads(invoke("list", "-c", "blocker", "--json").stdout)

    assert [m["id"] for m in data["memories"]] == [blocker]


def test_show_json_has_the_memory_and_its_links(invoke: Invoke) -> None:
    memory_id = remember(invoke, DECISION, "-c", "decision")

    data = json.loads(invoke("show", memory_id, "--json").stdout)

    assert data["id"] == memory_id
    assert data["category"] == "decision"
    assert data["links"] == [] and data["entities"] == []


def test_stats_json_counts_memories(invoke: Invoke) -> None:
    remember(invoke, DECISION, "-c", "decision")

    data = json.loads(invoke("stats", "--json").stdout)

    assert data["total"] == 1
    assert data["by_category"] == {"decision": 1}
    assert data["model"] == "hash-256"


def test_stats_on_a_store_without_a_login_say_nothing_of_a_role(invoke: Invoke) -> None:
    assert "role" not in invoke("stats").stdout
    assert json.loads(invoke("stats", "--json").stdout)["role"] is None


def test_status_embeds_pending_memories_and_says_ready(invoke: Invoke) -> None:
    remember(invoke)

    result = invoke("status")

    assert result.exit_code == 0, result.output
    assert "pending embeddings: 0" in result.stdout
    assert result.stdout.strip().endswith("ready")


def test_since_bogus_exits_2_with_the_accepted_forms(invoke: Invoke) -> None:
    result = invoke("list", "--since", "bogus")

    assert result.exit_code == 2
    assert "Cannot read 'bogus' as a time" in result.stderr


def test_since_keeps_recent_memories(invoke: Invoke) -> None:
    memory_id = remember(invoke)

    data = json.loads(invoke("list", "--since", "1h", "--json").stdout)

    assert [m["id"] for m in data["memories"]] == [memory_id]


@pytest.mark.skipif(
    not hasattr(MemoryService, "get_context"), reason="MemoryService.get_context not built yet"
)
def test_context_prints_a_markdown_bundle(invoke: Invoke) -> None:
    remember(invoke, DECISION, "-c", "decision")

    result = invoke("context", "graph store")

    assert result.exit_code == 0, result.output
    assert "Kuzu" in result.stdout


@pytest.mark.skipif(
    not hasattr(MemoryService, "get_context"), reason="MemoryService.get_context not built yet"
)
def test_context_json_parses(invoke: Invoke) -> None:
    remember(invoke, DECISION, "-c", "decision")

    result = invoke("context", "graph store", "--json")

    assert result.exit_code == 0, result.output
    assert isinstance(json.loads(result.stdout), dict)


@pytest.mark.skipif(
    not (hasattr(MemoryService, "export") and hasattr(MemoryService, "import_file")),
    reason="MemoryService.export / import_file not built yet",
)
def test_export_then_import_into_a_fresh_store_keeps_the_memory(invoke: Invoke, tmp_path: Path) -> None:
    memory_id = remember(invoke, DECISION, "-c", "decision")
    exported = tmp_path / "memories.jsonl"

    assert invoke("export", "-o", str(exported)).exit_code == 0
    imported = invoke("import", str(exported), data=tmp_path / "other")
    listed = json.loads(invoke("list", "--json", data=tmp_path / "other").stdout)

    assert imported.exit_code == 0, imported.output
    assert [m["id"] for m in listed["memories"]] == [memory_id]


@pytest.mark.skipif(
    not hasattr(MemoryService, "import_file"), reason="MemoryService.import_file not built yet"
)
def test_import_of_an_invalid_file_prints_line_numbers_and_exits_2(invoke: Invoke, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("this is not json\n", encoding="utf-8")

    result = invoke("import", str(bad))

    assert result.exit_code == 2
    assert "line 1: " in result.stderr


def test_import_of_a_file_with_a_line_that_is_not_utf8_names_it_and_imports_nothing(
    invoke: Invoke, tmp_path: Path
) -> None:
    line = '{"type": "memory", "id": "mem_1", "text": "Payments retry \U0001f680", "category": "fact", '
    line += '"scope": "global", "created_at": "2026-01-01T00:00:00Z"}'
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(line.encode() + b"\r\ncaf\xe9\r\n")

    result = invoke("import", str(latin1))

    assert result.exit_code == 2
    assert f"{latin1} has 1 line(s) that are not UTF-8; nothing was imported." in result.stderr
    assert "line 2: invalid UTF-8 at byte 3: save the file as UTF-8" in result.stderr
    assert '"total": 0' in invoke("stats", "--json").stdout


def test_reindex_re_embeds_every_memory(invoke: Invoke) -> None:
    remember(invoke)

    done = invoke("reindex")

    assert done.exit_code == 0, done.output
    assert "re-embedded 1 memory with hash-256" in done.stdout


HEAVY_MODULES = ("torch", "sentence_transformers", "kuzu", "fastmcp")
HELP_SCRIPT = f"""
import sys
from click.testing import CliRunner
from graphmem.cli.main import cli, commands

runner = CliRunner()
for args in [["--help"], *([name, "--help"] for name in commands())]:
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, (args, result.output)
print(",".join(m for m in {HEAVY_MODULES!r} if m in sys.modules))
"""


def test_help_imports_no_model_store_or_mcp_modules(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", HELP_SCRIPT], cwd=tmp_path, capture_output=True, text=True, check=False
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_import_of_a_file_that_is_not_an_export_lists_only_the_first_problems(
    invoke: Invoke, tmp_path: Path
) -> None:
    not_an_export = tmp_path / "notes.txt"
    not_an_export.write_text("".join(f"plain line {i}\n" for i in range(50)), "utf-8")

    result = invoke("import", str(not_an_export))

    assert result.exit_code == 2
    assert "line 20:" in result.stderr and "line 21:" not in result.stderr
    assert "and 30 more invalid lines" in result.stderr
    assert invoke("stats", "--json").exit_code == 0


def test_remember_from_stdin_with_invalid_utf8_is_refused_and_stores_nothing(invoke: Invoke) -> None:
    result = invoke("remember", "-", input=b"bad \xff\xfe bytes\n")  # type: ignore[arg-type]

    assert result.exit_code == 2
    assert "not valid UTF-8" in result.stderr
    assert '"total": 0' in invoke("stats", "--json").stdout


class _Endless(io.RawIOBase):
    """Standard input that never ends (``graphmem remember - < /dev/zero``)."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        buffer[:] = b"a" * len(buffer)
        return len(buffer)


@pytest.mark.timeout(60)  # a read to the end of what has none fails here instead of holding the run
@pytest.mark.parametrize("given", [b"a" * (MAX_TEXT_CHARS * 4 + 1), _Endless()], ids=["long", "endless"])
def test_remember_from_stdin_over_the_limit_is_refused_unread_and_stores_nothing(
    invoke: Invoke, given: Any
) -> None:
    result = invoke("remember", "-", input=given)

    assert result.exit_code == 2
    assert f"Standard input is over {MAX_TEXT_CHARS:,} characters" in result.stderr
    assert '"total": 0' in invoke("stats", "--json").stdout


def test_a_preference_stored_global_by_default_in_a_project_says_so(invoke: Invoke, git_project: str) -> None:
    where = Path(git_project)
    told = invoke("remember", "-c", "preference", "Prefer early returns over nested ifs", where=where)
    asked = invoke(
        "remember", "-c", "preference", "Prefer tabs over spaces", "--scope", "global", where=where
    )
    kept = invoke("remember", "-c", "preference", "Prefer early returns in src/app.py", where=where)

    assert told.exit_code == 0 and asked.exit_code == 0, told.output + asked.output
    assert "global: every project sees this preference (remember it with --scope project" in told.stderr
    assert "global:" not in asked.stderr
    assert "global:" not in kept.stderr  # about the project's code: the project's
