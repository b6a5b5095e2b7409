"""A bare word in a memory or a query names a code symbol only when the project's code graph knows
exactly one live symbol by that name (``Mentions.entities_in``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.service.memory import MemoryService

ORDERS = """
def refund_all(order):
    return order


def cancel(order):
    refund_all(order)


def update(order):
    return order


class Order:
    def close(self):
        cancel(self)


class Invoice:
    def close(self):
        pass
"""


@pytest.fixture
def shop(memory_service: MemoryService, git_project: str) -> str:
    (Path(git_project) / "src" / "orders.py").write_text(ORDERS, "utf-8")
    memory_service.bootstrap(git_project, history=0)
    return git_project


def named(memory: MemoryService, text: str, project: str) -> list[str]:
    return [e.name for e in memory.entities_in(text, project)]


def test_a_bare_identifier_of_a_known_symbol_is_linked_when_remembered(
    memory_service: MemoryService, shop: str
) -> None:
    stored = memory_service.remember("refund_all must stay idempotent", project=shop)
    assert [e.name for e in stored.entities] == ["refund_all"]


def test_a_bare_plain_word_that_one_symbol_is_called_is_linked(
    memory_service: MemoryService, shop: str
) -> None:
    assert named(memory_service, "what does cancel do", shop) == ["cancel"]


def test_a_bare_identifier_matches_when_recalled(memory_service: MemoryService, shop: str) -> None:
    about = memory_service.remember(
        "Refunds are idempotent since `refund_all` checks the ledger", project=shop
    )
    hits = memory_service.recall("is cancel safe to retry", project=shop).hits
    assert about.memory.id in {h.memory.id for h in hits}


def test_words_no_symbol_or_several_symbols_are_called_are_not_linked(
    memory_service: MemoryService, shop: str
) -> None:
    assert named(memory_service, "we should close the refund ticket today", shop) == []  # two close()


def test_common_words_and_capitalised_words_are_not_linked_even_when_a_symbol_has_them(
    memory_service: MemoryService, shop: str
) -> None:
    assert named(memory_service, "we need to update the docs of the Order page", shop) == []
    assert named(memory_service, "we need to `update` the docs", shop) == ["update"]


def test_without_a_code_graph_no_bare_word_is_linked(memory_service: MemoryService, git_project: str) -> None:
    assert named(memory_service, "what does cancel do with refund_all", git_project) == []


def test_a_text_that_writes_code_as_code_links_no_bare_word(memory_service: MemoryService, shop: str) -> None:
    assert named(memory_service, "`refund_all` is slow when cancel runs", shop) == ["refund_all"]


def test_a_symbol_only_a_plain_word_names_weighs_less_than_one_written_as_code(
    memory_service: MemoryService, shop: str
) -> None:
    from dataclasses import replace

    from graphmem.core.fusion import PLANS

    plan = replace(PLANS["hybrid"], source_priors={})  # the entity channel alone decides
    about_it = memory_service.remember("Note: `cancel` refunds through the ledger", project=shop).memory.id
    said = memory_service.remember("An order may be cancelled only before it ships", project=shop).memory.id

    as_word = memory_service.recall("may I cancel an order after it ships", project=shop, plan=plan).hits
    as_code = memory_service.recall("may I `cancel` an order after it ships", project=shop, plan=plan).hits

    assert [h.memory.id for h in as_word][:2] == [said, about_it]
    assert as_code[0].memory.id == about_it


def test_a_plain_word_names_no_symbol_that_only_a_test_defines(
    memory_service: MemoryService, git_project: str
) -> None:
    (Path(git_project) / "tests").mkdir()
    tests = "def querystring():\n    pass\n\n\ndef check_refund_totals():\n    pass\n"
    (Path(git_project) / "tests" / "test_orders.py").write_text(tests, "utf-8")
    memory_service.bootstrap(git_project, history=0)

    assert named(memory_service, "We parse queries with qs, not querystring", git_project) == []
    # A name shaped like code is the code's, wherever it is defined.
    assert named(memory_service, "check_refund_totals is flaky", git_project) == ["check_refund_totals"]


def test_a_plain_word_names_no_symbol_that_only_an_example_program_defines(
    memory_service: MemoryService, git_project: str
) -> None:
    # click's examples/naval/naval.py defines ship(): "Never ship on Friday" is not about it.
    (Path(git_project) / "examples" / "naval").mkdir(parents=True)
    naval = "def ship():\n    pass\n\n\ndef move_ship():\n    pass\n"
    (Path(git_project) / "examples" / "naval" / "naval.py").write_text(naval, "utf-8")
    memory_service.bootstrap(git_project, history=0)

    assert named(memory_service, "Never ship a release on Friday", git_project) == []
    assert named(memory_service, "move_ship is slow", git_project) == ["move_ship"]
    assert named(memory_service, "Never call `ship` twice", git_project) == ["ship"]


def test_a_negated_plain_word_still_names_the_projects_symbol(
    memory_service: MemoryService, shop: str
) -> None:
    # "Do not cancel ..." is a rule about cancel(): context on it must show the rule.
    stored = memory_service.remember("Never cancel an order twice", project=shop, category="directive")
    assert [e.name for e in stored.entities] == ["cancel"]
