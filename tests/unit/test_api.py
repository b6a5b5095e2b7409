"""``graphmem.open_memory()`` returns one declared protocol, ``graphmem.api.Memory``: the local
service and the daemon's client both implement it (mypy checks it where ``graphmem.connect``
returns either), and it declares the verbs ``/rpc`` serves, each on ``RemoteMemory`` with the
service's own parameters."""

from __future__ import annotations

import inspect
import pydoc

import pytest

from graphmem.api import Memory
from graphmem.server import verbs
from graphmem.server.daemon_process import DaemonInfo
from graphmem.server.remote import RemoteMemory, RemoteVerb
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
        f"RemoteMemory.{name} = RemoteVerb(Memory.{name})"
    )
    remote = getattr(RemoteMemory(INFO), name)

    assert parameters(remote) == parameters(getattr(memory_service, name))
    assert remote.__name__ == name


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
