"""The workers' shared warm-up (``support/warm_start.py``): every cache a run needs is one
worker's job, the shares are even, and a job leaves what pytest, Python and Hypothesis read back
as their own."""

from __future__ import annotations

import importlib.util
import marshal
from pathlib import Path

import pytest
from _pytest.assertion import rewrite
from support.warm_start import Job, jobs, plan, share_the_warm_up
from support.warm_start import _runner as runner

TEST_FILES = ["test_*.py", "*_test.py"]


def _tree(root: Path) -> Path:
    """A repository: graphmem, the tests' helpers and two test folders with conftest files."""
    for path, text in {
        "graphmem/__init__.py": "",
        "graphmem/core/model.py": "X = 1\n" * 40,
        "tests/conftest.py": "",
        "tests/support/helper.py": "Y = 2\n",
        "tests/unit/conftest.py": "",
        "tests/unit/test_one.py": "def test_one():\n    assert 1\n",
        "tests/unit/core/two_test.py": "def test_two():\n    assert 2\n",
        "tests/unit/core/helpers.py": "Z = 3\n",
        "tests/integration/test_three.py": "def test_three():\n    assert 3\n",
    }.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def test_the_jobs_are_the_rewritten_test_modules_the_plain_modules_and_the_codec_table(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path)

    found = jobs(root, [root / "tests" / "unit"], TEST_FILES)

    by_kind = {
        kind: sorted(str(j.path.relative_to(root)) for j in found if j.kind == kind and j.path)
        for kind in ("rewrite", "compile")
    }
    assert by_kind["rewrite"] == [
        "tests/conftest.py",
        "tests/unit/conftest.py",
        "tests/unit/core/two_test.py",
        "tests/unit/test_one.py",
    ]
    assert by_kind["compile"] == ["graphmem/__init__.py", "graphmem/core/model.py", "tests/support/helper.py"]
    assert [j.kind for j in found if j.path is None] == ["codec"]


def test_each_job_goes_to_one_worker_and_the_shares_are_even() -> None:
    all_jobs = [Job("compile", Path(f"m{i}.py"), cost) for i, cost in enumerate([5, 4, 3, 3, 2, 2, 1, 1, 1])]
    all_jobs.append(Job("codec", None, 6))

    shares = plan(all_jobs, 2)

    assert sorted((j for share in shares for j in share), key=repr) == sorted(all_jobs, key=repr)
    loads = [sum(j.cost for j in share) for share in shares]
    assert abs(loads[0] - loads[1]) <= 1
    assert plan(list(reversed(all_jobs)), 2) == shares  # every worker makes the same plan


def test_a_rewrite_job_leaves_the_cache_pytest_reads_with_its_asserts_rewritten(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    module = tmp_path / "test_cached.py"
    module.write_text("def test_it():\n    left, right = 1, 2\n    assert left == right\n")
    state = request.config.stash[rewrite.assertstate_key]

    runner(request.config)(Job("rewrite", module, 0.0))

    pyc = rewrite.get_cache_dir(module) / ("test_cached" + rewrite.PYC_TAIL)
    code = rewrite._read_pyc(module, pyc, state.trace)
    assert code is not None
    namespace: dict[str, object] = {}
    exec(code, namespace)
    with pytest.raises(AssertionError, match=r"assert 1 == 2"):  # pytest's explanation: rewritten
        namespace["test_it"]()  # type: ignore[operator]


def test_a_compile_job_leaves_the_bytecode_python_imports(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    module = tmp_path / "plain.py"
    module.write_text("VALUE = 41 + 1\n")

    runner(request.config)(Job("compile", module, 0.0))

    cached = Path(importlib.util.cache_from_source(str(module)))
    header, code = cached.read_bytes()[:16], cached.read_bytes()[16:]
    assert header[:4] == importlib.util.MAGIC_NUMBER
    namespace: dict[str, object] = {}
    exec(marshal.loads(code), namespace)
    assert namespace["VALUE"] == 42


def test_a_worker_makes_its_own_share_of_the_run_s_jobs(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Job] = []
    monkeypatch.setattr("support.warm_start._runner", lambda config: made.append)
    monkeypatch.setattr(request.config, "workerinput", {"workerid": "gw1", "workercount": 2}, raising=False)
    monkeypatch.setattr("sys.dont_write_bytecode", False)

    share_the_warm_up(request.config)

    root = request.config.rootpath
    paths = [root / arg.split("::")[0] for arg in request.config.args]
    expected = plan(jobs(root, [p for p in paths if p.exists()], request.config.getini("python_files")), 2)[1]
    assert made == expected and made


def test_a_run_of_one_process_makes_nothing(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Job] = []
    monkeypatch.setattr("support.warm_start._runner", lambda config: made.append)
    monkeypatch.delattr(request.config, "workerinput", raising=False)
    monkeypatch.setattr("sys.dont_write_bytecode", False)

    share_the_warm_up(request.config)

    assert made == []
