"""``support/scheduler.py``: pytest-xdist's ``--dist loadgroup`` hand-out, at a cost that does not
grow with the run. Two workers are played here: each reports its tests done one at a time, as a
real one does, and gets the next unit when it has two tests or fewer left."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from support.scheduler import BATCH_MAX, LoadGroupOnce
from xdist.scheduler import LoadGroupScheduling  # type: ignore[import-untyped]

# Two groups and ten tests of none (a unit each), as the collection of a run gives them.
COLLECTION = [
    *(f"tests/integration/test_d.py::test_{i}@tests/integration/test_d.py" for i in range(4)),
    *(f"tests/unit/test_h.py::test_{i}@hostile(stage=0)" for i in range(5)),
    *(f"tests/unit/test_u.py::test_{i}" for i in range(10)),
]


class Config:
    """What a scheduler reads of pytest's config: two workers, units in collection order (as
    ``tests/conftest.py`` sets it)."""

    option = SimpleNamespace(loadscopereorder=False)

    def getvalue(self, name: str) -> Any:
        assert name == "tx"
        return ["2*popen"]


class Worker:
    """A worker as the scheduler sees it: the tests it was sent, in order."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.queue: list[int] = []
        self.messages: list[list[int]] = []  # what each message it was sent held

    def send_runtest_some(self, indices: list[int]) -> None:
        self.queue.extend(indices)
        self.messages.append(list(indices))

    def shutdown(self) -> None:
        self.shutting_down = True


def run(scheduler: Any, collection: list[str] = COLLECTION) -> tuple[dict[str, list[str]], list[int]]:
    """Play a run: the tests each worker ran, and how many units the scheduler held after each
    test was done (``scheduler.nodes``: the workers, with the messages they were sent)."""
    workers = [Worker("gw0"), Worker("gw1")]
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, collection)
    scheduler.schedule()
    ran: dict[str, list[str]] = {worker.name: [] for worker in workers}
    held: list[int] = []
    turn = 0
    while any(worker.queue for worker in workers):
        worker = workers[turn % 2] if workers[turn % 2].queue else workers[(turn + 1) % 2]
        turn += 1
        index = worker.queue.pop(0)
        ran[worker.name].append(collection[index])
        scheduler.mark_test_complete(worker, index)
        held.append(sum(len(units) for units in scheduler.assigned_work.values()))
    assert scheduler.tests_finished and not scheduler.has_pending
    return ran, held


def test_the_units_go_to_the_same_workers_in_the_same_order_as_pytest_xdists() -> None:
    """A queue this short leaves no batch of unit tests (a batch is a quarter of a worker's share)."""
    ours, _ = run(LoadGroupOnce(Config()))
    theirs, _ = run(LoadGroupScheduling(Config()))

    assert ours == theirs
    assert sorted(ours["gw0"] + ours["gw1"]) == sorted(COLLECTION)  # each test once
    for group in ("test_d.py", "hostile"):  # a group's tests on one worker
        assert len({name for name, tests in ours.items() if any(group in test for test in tests)}) == 1


def test_a_unit_whose_tests_are_done_is_no_longer_held() -> None:
    """pytest-xdist's own holds every unit it ever handed out and counts them all at each test done."""
    _, held = run(LoadGroupOnce(Config()))

    assert max(held) <= 6  # three one-test units a worker at most in hand, never the run's 12
    assert held[-1] == 0


def test_unit_tests_of_no_group_go_out_in_batches_that_shrink_as_the_queue_drains() -> None:
    lone = [f"tests/unit/test_many.py::test_{i}" for i in range(400)]
    slow = [f"tests/integration/test_e.py::test_{i}" for i in range(5)]  # seconds each: never batched
    collection = [*COLLECTION[:9], *slow, *COLLECTION[9:], *lone]
    scheduler = LoadGroupOnce(Config())
    ran, _ = run(scheduler, collection)

    assert sorted(ran["gw0"] + ran["gw1"]) == sorted(collection)  # each test once
    for group in ("test_d.py", "hostile"):  # a group's tests on one worker
        assert len({name for name, tests in ran.items() if any(group in test for test in tests)}) == 1
    messages = [[collection[i] for i in message] for worker in scheduler.nodes for message in worker.messages]
    for message in messages:  # a group, an integration test, or unit tests of no group
        groups = {test.split("@")[1] if "@" in test else None for test in message}
        assert len(groups) == 1
        if groups == {None} and len(message) > 1:
            assert all(test.startswith("tests/unit/") for test in message)
    assert (
        sorted(test for message in messages if len(message) == 1 for test in message if test in slow) == slow
    )
    batches = [message for message in messages if "test_many" in message[-1]]
    assert max(map(len, batches)) == BATCH_MAX
    assert len(batches) < len(lone) / 5  # not a message a test
    for worker in scheduler.nodes:  # the last ones one test each: the workers finish together
        assert len(worker.messages[-1]) == 1
