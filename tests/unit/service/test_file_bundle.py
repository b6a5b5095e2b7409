"""The file bundle an agent can act on: what only this graph knows comes first (a person's
decisions, the file's structure, its callers), then history, most specific first; nothing is
listed twice and every cut says what it left out. The code graph is given a pass by hand."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from graphmem.core.code import CallRef, Definition, ImportRef, ParsedFile
from graphmem.core.codegraph import CodeScan, FileState, ProjectCode, symbol_key
from graphmem.core.keys import file_key
from graphmem.core.models import Category, Entity, EntityKind, MemoryRecord, Scope
from graphmem.core.timeparse import utc_now
from graphmem.service import linked_memories
from graphmem.service.context import CONTEXT_CANDIDATES
from graphmem.service.memory import MemoryService

SHAS = [f"{n:040x}" for n in range(1, 60)]


def _define(name: str, line: int) -> Definition:
    return Definition("function", name, name, line, line + 1, f"def {name}()", None, f"h-{name}", None)


CART = ParsedFile(
    "python",
    tuple(_define(f"step_{n}", 10 * n + 1) for n in range(60)),
    (),
    tuple(ImportRef(f"mod_{n}", (), None, n + 1) for n in range(3)),
    (),
    0,
)
# One function calling two of cart.py's: one caller, said once.
PAY = ParsedFile(
    "python",
    (_define("charge", 3),),
    (CallRef("step_1", None, 4, "charge"), CallRef("step_2", None, 5, "charge")),
    (ImportRef("cart", ("step_1", "step_2"), None, 1),),
    (),
    0,
)


def _commit(memory_service: MemoryService, project: str, n: int, text: str, files: list[str]) -> str:
    when = datetime(2026, 1, 1 + n % 28, tzinfo=UTC)
    record = MemoryRecord(
        f"mem_{n:016x}", text, Category.EVENT, Scope.PROJECT, project, when, when, when,
        source="git:" + SHAS[n], content_hash="git:" + SHAS[n],
    )  # fmt: skip
    entities = memory_service.store.get_entities([file_key(project, f) for f in files])
    memory_service.writer.add([record], about=[(record.id, e) for e in entities.values()])
    return record.id


@pytest.fixture
def project(memory_service: MemoryService, git_project: str) -> str:
    """``shop/cart.py`` (60 functions, 3 imports), ``shop/pay.py`` (calls two of them), 40 more files."""
    assert memory_service.code is not None
    files = {"shop/cart.py": CART, "shop/pay.py": PAY} | {
        f"shop/other_{n}.py": ParsedFile("python", (), (), (), (), 0) for n in range(40)
    }
    for path in files:  # on disk too: a memory naming a path is linked to a file of the project
        (Path(git_project) / path).parent.mkdir(parents=True, exist_ok=True)
        (Path(git_project) / path).write_text("\n", "utf-8")
    code = ProjectCode(git_project, files)
    scan = {path: (parsed, FileState(path, f"c-{path}", 10, 1)) for path, parsed in files.items()}
    memory_service.code.save(CodeScan(git_project, scan, [], code, code.edges(), utc_now()))
    return git_project


def test_callers_are_listed_once_each_naming_what_they_call(
    memory_service: MemoryService, project: str
) -> None:
    bundle = memory_service.get_context("shop/cart.py", project=project, max_tokens=4000)

    [(title, lines)] = [(t, lines) for t, lines in bundle.code if t.startswith("Called from")]
    assert lines == ["- `charge` (shop/pay.py:3) calls `step_1`, `step_2`"]
    assert title == "Called from (1 elsewhere)"


def test_a_long_defines_is_cut_with_how_many_it_left_out_and_never_crowds_out_the_rest(
    memory_service: MemoryService, project: str
) -> None:
    bundle = memory_service.get_context("shop/cart.py", project=project)

    sections = dict(bundle.code)
    defines = sections["Defines (60)"]
    assert defines[-1] == f"- …{60 - (len(defines) - 1)} more"
    assert "Called from (1 elsewhere)" in sections
    assert [line for line in defines if line.startswith("- function")] == [
        line for line in dict.fromkeys(defines) if line.startswith("- function")
    ]


def test_a_persons_decision_and_specific_commits_come_before_broad_ones(
    memory_service: MemoryService, project: str
) -> None:
    broad = _commit(
        memory_service,
        project,
        1,
        "Reformat everything",
        ["shop/cart.py", *(f"shop/other_{n}.py" for n in range(40))],
    )
    specific = _commit(memory_service, project, 2, "Fix rounding in step_3", ["shop/cart.py"])
    decision = memory_service.remember(
        "We decided shop/cart.py rounds half to even because the ledger does",
        category="decision",
        project=project,
    ).memory.id
    for n in range(3, 40):
        _commit(
            memory_service,
            project,
            n,
            f"Tune step {n} of the cart pipeline again",
            ["shop/cart.py", "shop/pay.py"],
        )

    bundle = memory_service.get_context("shop/cart.py", project=project)

    kept = [item.hit.memory.id for items in bundle.groups.values() for item in items]
    assert decision in kept
    events = [item.hit.memory.id for item in bundle.groups[Category.EVENT]]
    assert events[0] == specific
    assert broad not in events
    assert bundle.omitted_history >= 1
    assert "from its history" in bundle.markdown
    markdown = bundle.markdown
    assert markdown.index("### Decisions") < markdown.index("### Defines (60)") < markdown.index("### Events")


def test_a_file_not_in_the_graph_adds_only_memories_that_name_it(
    memory_service: MemoryService, project: str
) -> None:
    named = memory_service.remember("The sessions adapter keeps cookies per host", project=project).memory.id
    memory_service.remember(
        "Commit 1a2b3c4: move the http client under src", category="event", project=project
    )

    bundle = memory_service.get_context("src/http/sessions.py", project=project)

    assert bundle.found is False
    assert [item.hit.memory.id for item in bundle.related_memories] == [named]


def _many_linked(memory_service: MemoryService, project: str) -> tuple[str, set[str]]:
    """A person's decision and 50 commits about ``shop/cart.py``: more than ``CONTEXT_CANDIDATES``."""
    decision = memory_service.remember(
        "We decided shop/cart.py rounds half to even because the ledger does",
        category="decision",
        project=project,
    ).memory.id
    commits = {
        _commit(memory_service, project, n, f"Tune step {n} of the cart pipeline", ["shop/cart.py"])
        for n in range(1, 51)
    }
    return decision, commits


def test_a_memory_linked_to_the_file_is_never_shown_as_not_linked(
    memory_service: MemoryService, project: str
) -> None:
    from graphmem.service.context import CONTEXT_CANDIDATES

    decision, commits = _many_linked(memory_service, project)
    linked = {decision, *commits}
    assert len(linked) > CONTEXT_CANDIDATES

    bundle = memory_service.get_context("shop/cart.py", project=project, max_tokens=4000)

    assert not linked & {item.hit.memory.id for item in bundle.related_memories}
    shown = {item.hit.memory.id for items in bundle.groups.values() for item in items}
    assert len(shown & linked) + bundle.omitted_about == len(linked)


def test_linked_memories_a_budget_cannot_hold_are_counted_as_left_out(
    memory_service: MemoryService, project: str
) -> None:
    decision, commits = _many_linked(memory_service, project)

    bundle = memory_service.get_context("shop/cart.py", project=project, max_tokens=300)

    shown = {item.hit.memory.id for items in bundle.groups.values() for item in items}
    assert decision in shown
    assert bundle.omitted_about == bundle.omitted_history == len(commits - shown)
    assert f"({bundle.omitted_history} from its history)" in bundle.markdown


def test_a_merge_commit_linked_to_no_file_comes_after_the_commits_that_changed_the_file(
    memory_service: MemoryService, project: str
) -> None:
    first = _commit(memory_service, project, 1, "Fix rounding in step_3", ["shop/cart.py"])
    second = _commit(memory_service, project, 2, "Tune step_4", ["shop/cart.py", "shop/pay.py"])
    merge = _commit(memory_service, project, 3, "Commit 0000003: Merge tag '4.16.2'", [])
    step = Entity(symbol_key(project, "shop/cart.py", "step_3"), EntityKind.SYMBOL, "step_3", project)
    memory_service.writer.attach([(merge, step)], store_entities=False)  # as blame links a merge

    bundle = memory_service.get_context("shop/cart.py", project=project, max_tokens=4000)

    events = [item.hit.memory.id for item in bundle.groups[Category.EVENT]]
    assert events == [first, second, merge]


def test_a_hub_reads_by_id_only_what_it_can_show_and_counts_the_rest(
    memory_service: MemoryService, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(linked_memories, "RANKED_READ_MAX", 20)
    monkeypatch.setattr(linked_memories, "HUB_LISTED", 10)
    decision, commits = _many_linked(memory_service, project)
    store = memory_service.store
    asked: list[int] = []  # how many ids each read by id asks for
    get_memories = store.get_memories
    monkeypatch.setattr(store, "get_memories", lambda ids: asked.append(len(ids)) or get_memories(ids))

    bundle = memory_service.get_context("shop/cart.py", project=project, max_tokens=300)

    shown = {item.hit.memory.id for items in bundle.groups.values() for item in items}
    assert decision in shown
    assert max(asked) <= CONTEXT_CANDIDATES  # not the 51 linked memories at once
    assert len(shown & {decision, *commits}) + bundle.omitted_about == len(commits) + 1
    assert bundle.omitted_history == len(commits - shown)
