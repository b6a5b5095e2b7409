"""``graphmem bench scale --projects N``: the memories spread over N projects named by their
checkouts' paths (``<root>/proj-0``, ...), and every timed call, in the benchmark's process or a
child of it, asking for the first, a real git checkout the cold recall processes run in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from support.scale_reports import scale_report as a_report

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.bench import clients, scale, scale_children, scale_report, scale_small
from graphmem.bench.synthetic import synthetic_memories, synthetic_queries
from graphmem.cli import main
from graphmem.connect import resolve_project
from graphmem.core.models import Scope, Status
from graphmem.core.ports import VectorQuery, Visibility
from graphmem.errors import InvalidInputError
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

DIMENSION = 384


def test_the_memories_are_spread_over_the_projects_in_turn_with_the_texts_of_global_ones(
    tmp_path: Path,
) -> None:
    spread = synthetic_memories(7, projects=3, root=tmp_path)
    plain = synthetic_memories(7)

    assert [(m["scope"], m.get("project")) for m in spread] == [
        ("project", str(tmp_path / f"proj-{i % 3}")) for i in range(7)
    ]
    assert all(m["scope"] == "global" and "project" not in m for m in plain)
    assert [(m["id"], m["text"]) for m in spread] == [(m["id"], m["text"]) for m in plain]
    assert synthetic_memories(7, projects=3, root=tmp_path) == spread  # deterministic


def test_projects_without_the_folder_of_their_checkouts_are_refused() -> None:
    with pytest.raises(ValueError, match="named by their checkouts' paths"):
        synthetic_memories(7, projects=3)


class _Recording:
    """The measured service, keeping the project each recall and remember asks for."""

    def __init__(self, inner: MemoryService, asked: dict[str, list[str | None]]) -> None:
        self._inner = inner
        self._asked = asked

    def recall(self, query: str, **kwargs: Any) -> Any:
        self._asked["recall"].append(kwargs.get("project"))
        return self._inner.recall(query, **kwargs)

    def remember(self, text: str, **kwargs: Any) -> Any:
        self._asked["remember"].append(kwargs.get("project"))
        return self._inner.remember(text, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, projects: int, small_project: int = 0
) -> tuple[dict[str, Any], dict[str, list[str | None]], list[tuple[str, tuple[str, ...], str | None]]]:
    """A small run on a Kùzu store in ``tmp_path``, the measured service recorded and the
    children stubbed: each child's script, its arguments and, for a cold recall, the project its
    CLI would ask for where it was started (git's answer for its directory, read then)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    asked: dict[str, list[str | None]] = {"recall": [], "remember": []}
    measured = scale._measured_service
    monkeypatch.setattr(scale, "_measured_service", lambda *args: _Recording(measured(*args), asked))
    children: list[tuple[str, tuple[str, ...], str | None]] = []

    def child(
        script: str, *args: str, store_url: str | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        from_checkout = resolve_project(cwd) if script == scale_children.COLD_RECALL_SCRIPT else None
        children.append((script, args, from_checkout))
        stderr = "graphmem-bench peak-rss-kb 1024\ngraphmem-bench rss-kb 1024\n"
        return subprocess.CompletedProcess([], 0, "", stderr)

    monkeypatch.setattr(scale_children, "_child", child)
    # The 200 remembers the benchmark times are no part of this: 20 will do.
    monkeypatch.setattr(scale, "synthetic_queries", lambda n, seed=11: synthetic_queries(min(n, 20), seed))
    report = scale.run(
        100,
        HashEmbedder(DIMENSION),
        queries=10,
        cold_runs=2,
        data_dir=tmp_path / "data",
        writes=3,
        backlog=2,
        projects=projects,
        small_project=small_project,
    )
    return report, asked, children


def test_with_projects_the_store_holds_them_and_every_timed_call_asks_for_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, asked, children = _run(tmp_path, monkeypatch, projects=3)

    first = report["recall_project"]
    root = Path(first).parent
    names = [str(root / f"proj-{n}") for n in range(3)]
    # in the benchmark's temporary folder, resolved as graphmem resolves a checkout's path
    assert (Path(first).name, root.parent.parent, root) == ("proj-0", tmp_path.resolve(), root.resolve())
    memory = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(DIMENSION))
    try:
        seen = {
            project: memory.store.list_memories(Visibility(project, frozenset(Status)), limit=1000)
            for project in (None, *names)
        }
    finally:
        memory.close()
    assert seen[None] == []  # no memory is global
    for project, held in seen.items():
        assert {(record.scope, record.project) for record in held} <= {(Scope.PROJECT, project)}
    imported = {p: [r for r in held if r.text.endswith("].")] for p, held in seen.items()}
    assert [len(imported[name]) for name in names] == [34, 33, 33]  # memory i is proj-{i % 3}'s
    # the measure phase's remembers, the daemon's writes and the backlog: all proj-0's
    assert len(seen[first]) - 34 == 20 + 3 + 2
    assert len(seen[names[1]]) == len(seen[names[2]]) == 33
    assert asked["recall"] == [first] * (1 + 10)  # the recall that loads the index, then the timed ones
    assert set(asked["remember"]) == {first}
    # each cold recall (two, then two beside the backlog) started in proj-0's checkout, whose
    # project git says is proj-0; the serving process given proj-0
    assert [(script, from_checkout) for script, _, from_checkout in children] == [
        *[(scale_children.COLD_RECALL_SCRIPT, first)] * 2,
        (scale_children.SERVING_SCRIPT, None),
        *[(scale_children.COLD_RECALL_SCRIPT, first)] * 2,
    ]
    assert children[2][1][0] == first
    assert report["projects"] == 3


def test_without_projects_every_memory_is_global_and_no_call_names_a_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, asked, children = _run(tmp_path, monkeypatch, projects=0)

    assert set(asked["recall"]) == set(asked["remember"]) == {None}
    # the cold recalls started in no checkout; the serving process given no project
    assert [(script, from_checkout) for script, _, from_checkout in children] == [
        *[(scale_children.COLD_RECALL_SCRIPT, None)] * 2,
        (scale_children.SERVING_SCRIPT, None),
        *[(scale_children.COLD_RECALL_SCRIPT, None)] * 2,
    ]
    assert children[2][1][0] == ""
    assert (report["projects"], report["recall_project"]) == (0, None)


def test_a_checkout_graphmem_names_otherwise_fails_the_run_before_anything_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("graphmem.connect.resolve_project", lambda path: "/home/dev/checkout")

    with pytest.raises(RuntimeError, match=r"to the project '/home/dev/checkout', not '/.*/proj-0'"):
        _run(tmp_path, monkeypatch, projects=3)

    assert not (tmp_path / "data").exists()


def test_the_text_report_says_how_many_projects_and_which_one_the_recalls_ask_for() -> None:
    spread = scale_report.format_report(
        a_report(projects=20, recall_project="/tmp/graphmem-scale-x/projects/proj-0")
    ).splitlines()
    global_ = scale_report.format_report(a_report()).splitlines()

    assert spread[1] == (
        "projects      memories spread over 20 projects; recalls and writes ask for proj-0, a git checkout"
    )
    assert global_[1] == "projects      none: every memory global, each recall sees them all"


# The cold recall process as the benchmark starts it, its service a spy that says what the real
# CLI asked for (project and branch) and refuses the recall: no store, no model.
SPIED_CLI = """
import sys
from graphmem.cli import main as cli_main
from graphmem.errors import InvalidInputError

class Spy:
    def warm_up(self):
        pass
    def close(self):
        pass
    def recall(self, query, **kwargs):
        print("spied", repr(kwargs["project"]), repr(kwargs["branch"]), file=sys.stderr)
        raise InvalidInputError("spied")

cli_main.SERVICE_FACTORY = lambda data_dir, check_model=True: Spy()
"""


def _spied_cold_recall(data_dir: Path, cwd: Path) -> list[str]:
    """What the cold recall process started in ``cwd`` asked its service for: its CLI as it is
    (nothing of it replaced but the service), its arguments ``cold_recalls``'."""
    recall = ["--data-dir", str(data_dir), "recall", "--json", "why redis"]
    done = subprocess.run(
        [sys.executable, "-c", SPIED_CLI + scale_children.COLD_RECALL_SCRIPT, *recall],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    return [line for line in done.stderr.splitlines() if line.startswith("spied")]


def test_the_cold_recall_process_asks_for_the_project_of_the_checkout_it_runs_in(tmp_path: Path) -> None:
    project = str(tmp_path.resolve() / "projects" / "proj-0")
    checkout = scale_children.make_checkout(project)

    # git's answer for its directory: the project, on its default branch
    assert _spied_cold_recall(tmp_path / "data", checkout) == [f"spied {project!r} None"]


def test_the_cold_recall_process_outside_any_repository_asks_for_no_project(tmp_path: Path) -> None:
    assert _spied_cold_recall(tmp_path / "data", tmp_path) == ["spied None None"]


def test_the_benchmarks_checkout_is_made_without_the_users_git_config_or_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hostile = tmp_path / "gitconfig"  # no identity, and commits signed with a key no one has
    hostile.write_text("[user]\n\tuseConfigOnly = true\n[commit]\n\tgpgsign = true\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(hostile))
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    project = str(tmp_path.resolve() / "projects" / "proj-0")

    checkout = scale_children.make_checkout(project)

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=checkout, capture_output=True, text=True, check=True
        ).stdout.strip()

    assert git("log", "--format=%an <%ae>") == "graphmem bench <bench@graphmem.invalid>"
    assert git("branch", "--show-current") == "main"


# The serving process's script, its store a spy that says what each recall asks for.
SPIED_STORE = """
import sys
import graphmem.app

class Spy:
    def recall(self, text, **kwargs):
        print("spied", repr(kwargs["project"]), file=sys.stderr)
    def close(self):
        pass

graphmem.app.open_memory = lambda settings: Spy()
"""


@pytest.mark.parametrize(("project", "asked"), [("/work/proj-0", "'/work/proj-0'"), ("", "None")])
def test_the_serving_process_recalls_for_the_project_it_is_given(
    tmp_path: Path,
    project: str,
    asked: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The script run here with the arguments its process is given, as the client scripts are
    (``test_a_client_process_asks_for_the_project_it_is_given``): a process of its own cost 0.9 s
    of CPU, importing graphmem. ``tests/integration/test_benchmarks.py`` starts it as a process."""
    import graphmem.app

    texts = json.dumps(["why redis", "who owns auth"])
    monkeypatch.setattr(graphmem.app, "open_memory", graphmem.app.open_memory)  # put back after the spy
    monkeypatch.setattr(sys, "argv", ["-c", project, str(tmp_path), texts])
    with warnings.catch_warnings():
        # Python's default in the script's own process: it reads /proc/self/status without closing it.
        warnings.simplefilter("ignore", ResourceWarning)
        exec(SPIED_STORE + scale_children.SERVING_SCRIPT, {"__name__": "__main__"})

    stderr = capsys.readouterr().err
    assert [line for line in stderr.splitlines() if line.startswith("spied")] == [f"spied {asked}"] * 2


@pytest.mark.parametrize(
    ("script", "body"), [(clients.CLIENT_SCRIPT, "serve_child"), (clients.HTTP_CLIENT_SCRIPT, "http_child")]
)
def test_a_client_process_asks_for_the_project_it_is_given(
    script: str, body: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[tuple[Any, ...]] = []
    monkeypatch.setattr(clients, body, lambda *args: started.append(args))
    for project in ("/work/proj-0", ""):
        monkeypatch.setattr(sys, "argv", ["-c", "/data", "3", "20.0", "/out.json", project])
        exec(script, {})

    assert started == [
        ("/data", 3, 20.0, "/out.json", "/work/proj-0"),
        ("/data", 3, 20.0, "/out.json", None),
    ]


# A client process's stand-in: the arguments it was started with, as its report.
ARGUMENTS_CLIENT = """
import json, sys
from pathlib import Path
print("graphmem-bench client-ready", flush=True)
assert sys.stdin.readline().strip() == "go"
Path(sys.argv[4]).write_text(json.dumps({"calls": [], "argv": sys.argv[1:]}), encoding="utf-8")
"""


def test_each_client_process_is_started_with_the_project_of_the_run(tmp_path: Path) -> None:
    results, _ = clients._children(
        ARGUMENTS_CLIENT,
        [tmp_path, tmp_path],
        0.0,
        dict(os.environ),
        tmp_path,
        first=4,
        project="/work/proj-0",
    )

    # each its client number, then its project last
    assert [(result["argv"][1], result["argv"][-1]) for result in results] == [
        ("4", "/work/proj-0"),
        ("5", "/work/proj-0"),
    ]


def test_the_clients_calls_name_the_project_through_the_daemon_and_over_http() -> None:
    asked: list[tuple[str, str | None]] = []
    memory = SimpleNamespace(
        recall=lambda text, **kwargs: asked.append(("recall", kwargs["project"])),
        remember=lambda text, **kwargs: asked.append(("remember", kwargs["project"])),
    )
    runtime = SimpleNamespace(
        memory=memory,
        served=lambda function, *args, **kwargs: function(*args, **kwargs),
        written=lambda: None,
    )

    served = clients.Calls.served(runtime, "/work/proj-0")  # type: ignore[arg-type]
    remote = clients.Calls.remote(memory, "/work/proj-0")  # type: ignore[arg-type]
    for calls in (served, remote):
        calls.recall("why redis")
        calls.remember("Redis holds the sessions")

    assert asked == [("recall", "/work/proj-0"), ("remember", "/work/proj-0")] * 2


@pytest.mark.parametrize(
    ("options", "fix"),
    [
        (["--projects", "-1"], "--projects -1 is negative: give the number of projects"),
        (["--memories", "100", "--projects", "101"], "give --projects 100 or fewer, or more --memories"),
        (["--small-project", "10"], "--small-project 10 needs large projects beside it: give --projects too"),
    ],
)
def test_a_count_of_projects_the_store_cannot_be_spread_over_is_refused_saying_how_to_fix_it(
    options: list[str], fix: str
) -> None:
    result = CliRunner().invoke(main.cli, ["bench", "scale", *options])

    assert result.exit_code == InvalidInputError.exit_code
    assert fix in result.output and "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        ({"projects": 101}, "--projects 101 is more than --memories 100"),
        ({"small_project": 30}, "--small-project 30 needs large projects beside it"),
        ({"projects": 3, "small_project": -1}, "--small-project -1 is negative"),
    ],
)
def test_the_benchmark_itself_refuses_what_it_cannot_build_before_it_builds_anything(
    options: dict[str, int], refusal: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    with pytest.raises(InvalidInputError, match=refusal):
        scale.run(100, HashEmbedder(DIMENSION), **options)

    assert list(tmp_path.iterdir()) == []


# -- a small project beside the large ones (``--small-project``) ------------------------------


def test_a_small_project_is_remembered_beside_the_first_and_its_recalls_and_vector_search_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, asked, _ = _run(tmp_path, monkeypatch, projects=3, small_project=30)

    first = report["recall_project"]
    small = str(Path(first).parent / "small-0")  # the embedded store: a graph per project, any name
    memory = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(DIMENSION))
    try:
        held = memory.store.list_memories(Visibility(small, frozenset(Status)), limit=1000)
    finally:
        memory.close()
    assert len(held) == 30 and {(r.scope, r.project) for r in held} == {(Scope.PROJECT, small)}
    # the measure phase's recalls, then the small project's: one for each timed query
    assert asked["recall"] == [first] * (1 + 10) + [small] * 10
    assert asked["remember"] == [first] * (20 + 3) + [small] * 30  # (the backlog: another service)
    found = report["small_project"]
    assert (found["memories"], found["project"], found["beside"]) == (30, small, first)
    assert set(found["recall_ms"]) == {"p50", "p95"}
    # 30 memories, fewer than the recall's depth: the exact top k is all of them, and found
    assert found["vector_search"] == {"k": 30, "searches": 10, "share_of_exact": 1.0, "short": 0}


def test_without_a_small_project_the_report_has_none() -> None:
    report = a_report(projects=3, recall_project="/tmp/x/projects/proj-0")
    assert "small project" not in scale_report.format_report(report)


class _Parts:
    """A team store's vector index as the name's choice sees it: the part of each name."""

    def __init__(self, parts: dict[str, int]) -> None:
        self.parts = parts

    def parts_of(self, names: list[str]) -> dict[str, int]:
        return {name: self.parts.get(name, 5) for name in names}


def test_on_a_team_store_the_small_project_is_named_into_the_first_projects_part_of_the_index(
    tmp_path: Path,
) -> None:
    first = str(tmp_path / "proj-0")
    parts = _Parts({first: 3, str(tmp_path / "small-0"): 1, str(tmp_path / "small-7"): 3})
    team = SimpleNamespace(store=SimpleNamespace(vectors=parts))
    embedded = SimpleNamespace(store=SimpleNamespace(vectors=object()))

    assert scale_small.small_project_name(team, tmp_path, first) == str(tmp_path / "small-7")  # type: ignore[arg-type]
    assert scale_small.small_project_name(embedded, tmp_path, first) == str(tmp_path / "small-0")  # type: ignore[arg-type]


class _Searching:
    """A service whose vector search is given: the stored vectors are the rows of ``vectors``."""

    def __init__(self, vectors: np.ndarray, answer: list[int]) -> None:
        self.vectors = vectors
        self.answer = answer
        self.semantic = self

    def vector(self, memory_id: str) -> np.ndarray:
        return self.vectors[int(memory_id)]

    def embed_query(self, text: str) -> np.ndarray:
        return self.vectors[0]

    def search(self, query: VectorQuery) -> list[tuple[str, float]]:
        return [(str(row), 0.0) for row in self.answer[: query.k]]


@pytest.mark.parametrize(
    ("answer", "share", "short"),
    [
        (list(range(5)), 1.0, 0),  # the five nearest the first row: rows 0-4, as stored
        ([0, 1, 2, 9, 8], 0.6, 0),  # two of the five wrong
        ([0, 1, 2], 0.6, 1),  # three found of five
    ],
)
def test_the_small_projects_vector_search_is_compared_with_the_exact_nearest(
    answer: list[int], share: float, short: int
) -> None:
    # rows ever further from row 0: row i at angle i * 0.1 rad from it
    angles = np.arange(10) * 0.1
    vectors = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32) * 3  # not unit length
    service = _Searching(vectors, answer)
    ids = [str(row) for row in range(10)]

    found = scale_small.vector_search(service, ids, "p", ["q"], depth=5)  # type: ignore[arg-type]

    assert found == {"k": 5, "searches": 1, "share_of_exact": share, "short": short}
