"""bootstrap on the fixture repository samples/repos/shop: code graph, facts, history, get_context."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.adapters.embedders import HashEmbedder
from graphmem.adapters.parse_pool import ParserPool
from graphmem.app import open_memory
from graphmem.core.models import Category, Status
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

SHOP = Path(__file__).resolve().parents[2] / "samples" / "repos" / "shop"


def git(root: Path, *args: str, author: str = "Ana Lopez", when: str = "2026-03-01T10:00:00Z") -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": author,
        "GIT_AUTHOR_EMAIL": f"{author.split()[0].lower()}@example.com",
        "GIT_COMMITTER_NAME": author,
        "GIT_COMMITTER_EMAIL": f"{author.split()[0].lower()}@example.com",
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_DATE": when,
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(root.parent),
    }
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """The fixture repository with a short history: refund and money change together."""
    root = tmp_path / "shop"
    shutil.copytree(SHOP, root)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Initial shop")
    for n, who in enumerate(("Ana Lopez", "Ben Okafor")):
        (root / "src/shop/money.py").write_text((root / "src/shop/money.py").read_text() + f"\n# rev {n}\n")
        (root / "src/shop/refund.py").write_text((root / "src/shop/refund.py").read_text() + f"\n# rev {n}\n")
        git(
            root,
            "commit",
            "-qam",
            f"Fix refund rounding, fixes #1{n}",
            author=who,
            when=f"2026-03-0{n + 2}T10:00:00Z",
        )
    return root.resolve()


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[MemoryService]:
    service = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    yield service
    service.close()


def test_bootstrap_builds_the_code_graph(memory: MemoryService, shop: Path) -> None:
    report = memory.bootstrap(shop)

    assert report.files == 8 and report.parsed == 8
    assert report.parse_errors > 0  # broken.py: what parses is indexed
    assert [path for path, _ in report.parse_error_files] == ["src/shop/broken.py"]
    assert report.calls.get("self", 0) >= 2  # self.log, self.fee
    assert report.calls.get("import", 0) >= 2  # round_half_even, to_cents, refund.refund_all
    assert report.commits == 3
    context = memory.get_context("src/shop/refund.py", project=str(shop), max_tokens=3000)
    code = {title.split(" (", 1)[0]: lines for title, lines in context.code}  # titles carry counts
    defines = "\n".join(code["Defines"])
    assert "`RefundService.apply`" in defines and "`refund_all`" in defines
    assert any("checkout.py" in line for line in code["Imported by"])
    assert any("money.py" in line for line in code["Usually changes with"])
    assert any(
        "Fix refund rounding" in item.hit.memory.text for items in context.groups.values() for item in items
    )


def test_get_context_on_a_symbol_lists_callers_and_callees(memory: MemoryService, shop: Path) -> None:
    memory.bootstrap(shop, history=0)

    context = memory.get_context("RefundService.apply", project=str(shop))

    assert context.entity is not None and context.entity.name == "RefundService.apply"
    code = {title.split(" (", 1)[0]: lines for title, lines in context.code}  # titles carry counts
    assert any("refund_all" in line for line in code["Called by"])
    callees = "\n".join(code["Calls"])
    assert "`round_half_even` (src/shop/money.py" in callees and "— import" in callees
    assert "`RefundService.fee`" in callees and "— self" in callees


def test_a_rescan_with_nothing_changed_parses_nothing_and_edits_are_incremental(
    memory: MemoryService, shop: Path
) -> None:
    memory.bootstrap(shop, history=0)
    again = memory.bootstrap(shop, history=0)
    assert (again.parsed, again.unchanged, again.removed) == (0, 8, 0)

    (shop / "src/shop/checkout.py").write_text("def pay(amount: float) -> int:\n    return 0\n")
    (shop / "web/format.ts").unlink()
    third = memory.bootstrap(shop, history=0)

    assert (third.parsed, third.removed) == (1, 1)
    context = memory.get_context("src/shop/refund.py", project=str(shop))
    assert not any(
        title.startswith("Imported by") for title, _ in context.code
    )  # checkout no longer imports refund


def test_memories_about_a_symbol_become_possibly_stale_when_its_body_changes(
    memory: MemoryService, shop: Path
) -> None:
    memory.bootstrap(shop, history=0)
    note = memory.remember(
        "RefundService.apply must round before the fee is taken", category="decision", project=str(shop)
    )
    assert any(e.name == "RefundService.apply" for e in note.entities)
    fresh = memory.get_context("RefundService.apply", project=str(shop))
    assert "possibly stale" not in fresh.markdown

    refund = shop / "src/shop/refund.py"
    refund.write_text(refund.read_text().replace("return self.fee(total)", "return self.fee(total) + 0"))
    memory.bootstrap(shop, history=0)

    context = memory.get_context("RefundService.apply", project=str(shop))
    assert "possibly stale: RefundService.apply changed on" in context.markdown

    text = refund.read_text()
    refund.write_text(text[: text.index("    def apply")] + text[text.index("    def fee") :])
    memory.bootstrap(shop, history=0)
    kept = memory.show(note.memory.id)
    assert kept.memory.status is Status.ACTIVE  # the memory is kept; its symbol is marked deleted
    assert "deleted on" in memory.get_context("RefundService.apply", project=str(shop)).markdown


def test_docs_become_facts_and_directives_updated_not_duplicated(memory: MemoryService, shop: Path) -> None:
    memory.bootstrap(shop, history=0)
    directives = memory.list(project=str(shop), categories=[Category.DIRECTIVE])
    assert any("card numbers" in d.text for d in directives)
    assert memory.bootstrap(shop, history=0).facts_added == 0

    agents = shop / "AGENTS.md"
    agents.write_text(agents.read_text().replace("- Never log card numbers.\n", ""))
    report = memory.bootstrap(shop, history=0)
    assert report.facts_archived >= 1
    assert not any("card numbers" in d.text for d in memory.list(project=str(shop), categories=["directive"]))


def test_a_directory_outside_git_works_without_history(memory: MemoryService, tmp_path: Path) -> None:
    root = tmp_path / "plain"
    shutil.copytree(SHOP, root)
    os.symlink("/etc", root / "src" / "escape")
    (root / "src" / "outside.py").symlink_to("/etc/hostname")

    report = memory.bootstrap(root)

    assert report.files >= 8 and report.commits == 0
    assert report.skipped.get("outside the project") == 1


def test_recall_follows_the_code_graph_from_a_named_symbol(memory: MemoryService, shop: Path) -> None:
    memory.bootstrap(shop, history=0)
    fee = memory.remember(
        "The fee() multiplier 0.99 was agreed with finance in March", category="decision", project=str(shop)
    )
    memory.remember("Deploys happen on Tuesdays", category="fact", project=str(shop))

    hits = memory.recall("what does RefundService.apply depend on", project=str(shop)).hits

    assert [h.memory.id for h in hits][:1] == [fee.memory.id]  # about its callee, RefundService.fee
    assert any(c.channel == "entity" for c in hits[0].channels)


def test_watch_picks_up_a_change(shop: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")}
    env.update(GRAPHMEM_CONFIG=str(tmp_path / "none.toml"), GRAPHMEM_DATA_DIR=str(tmp_path / "watch-data"))
    command = [sys.executable, "-m", "graphmem", "bootstrap", str(shop), "--history", "0", "--watch"]
    watcher = subprocess.Popen([*command, "--interval", "0.2"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert watcher.stdout is not None
        first = watcher.stdout.readline()
        assert "parsed" in first
        for _ in range(3):  # the summary lines of the first scan
            watcher.stdout.readline()
        time.sleep(0.5)
        (shop / "src/shop/money.py").write_text("def cents(x: float) -> int:\n    return int(x * 100)\n")
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline and "1 parsed" not in line:
            line = watcher.stdout.readline()
        assert "1 parsed, 0 removed" in line
    finally:
        watcher.send_signal(signal.SIGINT)  # stops after the pass under way, never in the middle
        code = watcher.wait(60)
        assert watcher.stdout is not None
        watcher.stdout.close()
    assert code == 0


def test_commit_refs_link_the_commit_to_the_issue(memory: MemoryService, shop: Path) -> None:
    memory.bootstrap(shop)

    issue = memory.get_context("#11", project=str(shop))

    assert any("fixes #11" in item.hit.memory.text for items in issue.groups.values() for item in items)


def test_an_empty_repository_and_an_interrupted_scan(
    memory: MemoryService, shop: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    report = memory.bootstrap(empty)
    assert (report.files, report.commits) == (0, 0)

    memory.bootstrap(shop, history=0)
    memory.store.set_meta(f"code_scan_dirty:{shop}", "1")  # as if the last pass died before its edges
    redone = memory.bootstrap(shop, history=0)
    assert redone.parsed == 8 and redone.calls


def test_a_pass_parsed_on_several_processes_stores_what_one_process_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parser's worker processes (``[bootstrap] parse_workers``): the stored parses, symbols
    and calls are the same from one worker as from two sharing the files."""
    started: list[ParserPool] = []
    spawn = ParserPool._spawn

    def counted(pool: ParserPool) -> subprocess.Popen[bytes]:
        started.append(pool)
        return spawn(pool)

    monkeypatch.setattr(ParserPool, "_spawn", counted)
    repo = tmp_path / "many"
    (repo / "pkg").mkdir(parents=True)
    for i in range(90):
        caller = f"    return step_{i - 1}(n) + 1\n" if i else "    return n\n"
        (repo / "pkg" / f"step_{i}.py").write_text(
            (f"from pkg.step_{i - 1} import step_{i - 1}\n\n\n" if i else "")
            + f"def step_{i}(n):\n    '''Step {i}.'''\n{caller}\n\nclass Stage{i}:\n    def run(self):\n"
            f"        return step_{i}(1)\n"
        )
    stored = []
    for workers in (1, 2):
        settings = load_settings(data_dir=tmp_path / f"data-{workers}", bootstrap={"parse_workers": workers})
        memory = open_memory(settings, embedder=HashEmbedder(64))
        try:
            report = memory.bootstrap(repo, history=0)
            assert memory.code is not None
            parses = memory.code.load_parsed(report.project)
            stored.append((report.parsed, report.symbols, report.calls, parses))
        finally:
            memory.close()
    assert stored[0][:2] == (90, 90 * 3)
    assert stored[0] == stored[1]
    assert len(started) == 3  # the first pass's one worker, the second's two
