"""The Python API's surface is declared: graphmem and each module docs/python-api.md documents
list their public names in ``__all__``, and every name listed exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import graphmem

DOCS = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"
PUBLIC_MODULES = (
    "graphmem",
    "graphmem.api",
    "graphmem.connect",
    "graphmem.errors",
    "graphmem.settings",
    "graphmem.service.results",
    "graphmem.core.models",
    "graphmem.core.bundle",
    "graphmem.core.events",
    "graphmem.core.views",
    "graphmem.core.timeparse",
)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_name_in_all_exists(name: str) -> None:
    module = importlib.import_module(name)
    declared = getattr(module, "__all__", None)

    assert isinstance(declared, list) and declared, f"{name} declares no __all__"
    assert len(set(declared)) == len(declared), f"{name}.__all__ names one twice"
    assert [entry for entry in declared if not hasattr(module, entry)] == [], f"{name}.__all__"


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_a_star_import_gives_what_all_declares(name: str) -> None:
    namespace: dict[str, object] = {}

    exec(f"from {name} import *", namespace)  # a name in __all__ that is missing raises here

    assert set(namespace) - {"__builtins__"} == set(importlib.import_module(name).__all__)


def test_the_package_declares_open_memory_and_what_it_returns_lazily() -> None:
    from graphmem.api import Memory
    from graphmem.connect import open_memory

    assert graphmem.__all__ == ["Memory", "open_memory"]
    assert graphmem.open_memory is open_memory and graphmem.Memory is Memory


def test_every_module_the_python_api_names_is_declared() -> None:
    named = set(re.findall(r"from (graphmem[\w.]*) import", DOCS.read_text(encoding="utf-8")))

    assert named <= set(PUBLIC_MODULES), sorted(named - set(PUBLIC_MODULES))
