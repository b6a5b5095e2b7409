"""``graphmem.open_memory()`` returns one declared protocol, ``graphmem.api.Memory``: the local
service and the daemon's client both implement it (mypy checks it where ``graphmem.connect``
returns either), and it declares the verbs ``/rpc`` serves, each on ``RemoteMemory`` with the
service's own parameters: made from the table of verbs, with no line of their own."""

from __future__ import annotations

import inspect
import pydoc

import pytest

from graphmem.api import Memory
from graphmem.server import verbs
from graphmem.server.daemon_process import DaemonInfo
from graphmem.server.remote import RemoteMemory, RemoteVerb, with_table_verbs
from graphmem.server.verbs import READS, WRITES, Binding, Owner, Verb
from graphmem.service.memory import MemoryService

# What every memory has beside the verbs of the table.
OWN = {"project", "branch", "bound", "warm_up", "embeds_on_read", "close"}
RPC_VERBS = sorted(name for name, verb in verbs.VERBS.items() if verb.rpc)
INFO = DaemonInfo(pid=1, url="http://127.0.0.1:9824", data_dir="/nowhere", started_at=0.0, version="t")


def parameters(function: object) -> list[tuple[str, object, object]]:
    """Each parameter's name, kind and default (annotations name the same types differently)."""
    assert callable(function)
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def test_both_memories_are_the_protocol(memory_service: MemoryService) -> None:
    local: Memory = memory_service
    remote: Memory = RemoteMemory(INFO).bound("/src/shop", "feature/fees")

    assert local.project is None and (remote.project, remote.branch) == ("/src/shop", "feature/fees")


def test_the_protocol_declares_the_verbs_rpc_serves_and_what_every_memory_has() -> None:
    declared = {name for name in vars(Memory) if not name.startswith("_")}

    assert declared == set(RPC_VERBS) | OWN


@pytest.mark.parametrize("name", RPC_VERBS)
def test_each_verb_is_declared_once_and_called_with_the_services_parameters(
    name: str, memory_service: MemoryService
) -> None:
    assert isinstance(vars(RemoteMemory).get(name), RemoteVerb), (
        f"declare {name} on graphmem.api.Memory: RemoteMemory makes its verbs from the protocol's"
    )
    remote = getattr(RemoteMemory(INFO), name)

    assert parameters(remote) == parameters(getattr(memory_service, name))
    assert remote.__name__ == name


def test_remote_memorys_verbs_are_the_rpc_verbs_of_the_table() -> None:
    made = {name for name, member in vars(RemoteMemory).items() if isinstance(member, RemoteVerb)}

    assert made == set(RPC_VERBS)


def test_a_verb_the_table_serves_and_the_protocol_declares_reaches_the_daemon_with_no_line_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def jot(self: Memory, text: str, *, project: str | None = None) -> int:
        """Jot a line down."""
        raise AssertionError("the protocol's declaration is never called")

    added = {
        "jot": Verb("jot", "int", ("text",), WRITES, Binding.PROJECT),
        "jot_here": Verb("jot_here", "int", ("text",), WRITES, rpc=False),  # not through /rpc
        "uptime": Verb("uptime", "int", (), READS, owner=Owner.DAEMON),  # the daemon's own
    }
    for name, verb in added.items():
        monkeypatch.setitem(verbs.VERBS, name, verb)
        monkeypatch.setattr(Memory, name, jot, raising=False)
    sent: list[tuple[str, dict[str, object]]] = []
    monkeypatch.setattr(
        RemoteMemory, "_call", lambda self, method, progress=None, **a: sent.append((method, a))
    )

    made = with_table_verbs(type("Made", (RemoteMemory,), {}))
    memory = made(INFO, project="/src/shop")
    memory.jot("Deploys go out on Tuesdays")

    assert sent == [("jot", {"text": "Deploys go out on Tuesdays", "project": "/src/shop"})]
    assert inspect.getdoc(memory.jot) == "Jot a line down."
    assert parameters(memory.jot) == parameters(jot)[1:]
    assert "jot_here" not in vars(made) and "uptime" not in vars(made)


DECLARED = sorted(name for name in vars(Memory) if not name.startswith("_"))


@pytest.mark.parametrize("name", DECLARED)
def test_each_member_of_the_protocol_has_a_doc(name: str) -> None:
    declared = vars(Memory)[name]

    assert inspect.getdoc(declared), f"graphmem.api.Memory.{name} has no docstring: say what it does there"


@pytest.mark.parametrize("name", RPC_VERBS)
def test_help_on_a_verb_local_or_remote_shows_the_protocols_doc(
    name: str, memory_service: MemoryService
) -> None:
    doc = inspect.getdoc(getattr(Memory, name))
    remote = getattr(RemoteMemory(INFO), name)

    assert inspect.getdoc(remote) == doc
    assert inspect.getdoc(getattr(memory_service, name)) == doc
    assert str(doc).splitlines()[0] in pydoc.render_doc(remote, renderer=pydoc.TextDoc())
