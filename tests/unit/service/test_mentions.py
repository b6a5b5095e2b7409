"""A bare word in a memory or a query names a code symbol only when the project's code graph knows
exactly one live symbol by that name (``Mentions.entities_in``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


# express's lib/response.js and lib/request.js, cut down: `res.get` and `req.get` share a name.
RESPONSE_JS = """
var res = Object.create(http.ServerResponse.prototype);
module.exports = res;

res.sendFile = function sendFile(path, options, callback) {
  return callback;
};

res.get = function(field) {
  return this.getHeader(field);
};
"""
REQUEST_JS = """
var req = Object.create(http.IncomingMessage.prototype);
req.get = function header(name) {
  return name;
};
"""


@pytest.fixture
def express(memory_service: MemoryService, git_project: str) -> str:
    (Path(git_project) / "lib").mkdir()
    (Path(git_project) / "lib" / "response.js").write_text(RESPONSE_JS, "utf-8")
    (Path(git_project) / "lib" / "request.js").write_text(REQUEST_JS, "utf-8")
    (Path(git_project) / "index.js").write_text("module.exports = require('./lib/response');\n", "utf-8")
    memory_service.bootstrap(git_project, history=0)
    return git_project


def test_a_dotted_name_written_as_plain_text_is_about_the_symbol_it_is(
    memory_service: MemoryService, express: str
) -> None:
    text = "res.sendFile rejects relative paths unless the root option is given, keep it so"
    stored = memory_service.remember(text, category="decision", project=express)
    assert [e.name for e in stored.entities] == ["res.sendFile"]

    bundle = memory_service.get_context("res.sendFile", project=express)
    linked = [item.hit.memory.id for items in bundle.groups.values() for item in items]
    assert stored.memory.id in linked
    assert stored.memory.id not in [item.hit.memory.id for item in bundle.related_memories]


def test_a_dotted_name_whose_last_part_several_symbols_share_is_still_read(
    memory_service: MemoryService, express: str
) -> None:
    assert named(memory_service, "res.get reads a header, case-insensitively", express) == ["res.get"]


def test_dotted_words_the_code_graph_does_not_have_name_nothing(
    memory_service: MemoryService, express: str
) -> None:
    text = "e.g. res.sendFile in index.js since v1.2, i.e. not app.render nor lib/request.js"
    assert named(memory_service, text, express) == ["index.js", "lib/request.js", "res.sendFile"]


def test_self_and_this_name_the_one_member_so_called(memory_service: MemoryService, git_project: str) -> None:
    code = "class Writer:\n    def flush(self):\n        pass\n\n\ndef close():\n    pass\n"
    (Path(git_project) / "src" / "writer.py").write_text(code, "utf-8")
    memory_service.bootstrap(git_project, history=0)

    assert named(memory_service, "self.flush must run before the lock is released", git_project) == [
        "Writer.flush"
    ]
    assert named(memory_service, "this.close is called twice", git_project) == []  # a function, no member


def test_a_text_of_hundreds_of_dotted_words_is_read_in_a_bounded_number_of_queries(
    memory_service: MemoryService, express: str
) -> None:
    from graphmem.service.mentions import MAX_DOTTED_SINGLE_LOOKUPS, MAX_SYMBOL_LOOKUPS

    code = memory_service.code
    assert code is not None
    calls: list[str] = []
    find_symbols, unique_symbols = code.find_symbols, code.unique_symbols

    def counted_find(*args: Any, **kwargs: Any) -> Any:
        calls.append("find_symbols")
        return find_symbols(*args, **kwargs)

    def counted_unique(*args: Any, **kwargs: Any) -> Any:
        calls.append("unique_symbols")
        return unique_symbols(*args, **kwargs)

    text = "res.sendFile and res.get, " + ", ".join(f"mod{n}.fn{n}" for n in range(500))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(code, "find_symbols", counted_find)
        patch.setattr(code, "unique_symbols", counted_unique)
        assert named(memory_service, text, express) == ["res.sendFile", "res.get"]

    assert calls.count("unique_symbols") == 1
    assert calls.count("find_symbols") <= MAX_SYMBOL_LOOKUPS + MAX_DOTTED_SINGLE_LOOKUPS
