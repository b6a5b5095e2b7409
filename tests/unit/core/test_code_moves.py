"""core.code_moves: which symbols and files a re-scan moved, from fingerprints alone."""

from __future__ import annotations

from graphmem.core.code import Definition, ParsedFile
from graphmem.core.code_moves import (
    MAX_FINGERPRINT_TOKENS,
    SIMILARITY_MIN,
    SKETCH_SIZE,
    file_moves,
    fingerprint,
    plan_moves,
    similarity,
)

BODY = """def {name}(order, amount):
    if amount <= 0:
        raise ValueError("amounts are positive")
    total = sum(line.price * line.quantity for line in order.lines)
    return min(amount, total - order.refunded)
"""
OTHER = """def {name}(customer):
    greeting = "Hello " + customer.first_name
    for note in customer.notes:
        print(note.text.upper())
    return greeting
"""


def define(name: str, text: str, kind: str = "function", qualified: str | None = None) -> Definition:
    source = text.format(name=name)
    shape, sketch = fingerprint(source, name)
    digest = str(hash(source))
    return Definition(kind, name, qualified or name, 1, 5, f"def {name}()", None, digest, None, shape, sketch)


def file(*definitions: Definition) -> ParsedFile:
    return ParsedFile("python", definitions, (), (), (), 0)


def test_a_rename_alone_keeps_the_shape() -> None:
    assert (
        fingerprint(BODY.format(name="refund"), "refund")[0]
        == fingerprint(BODY.format(name="repay"), "repay")[0]
    )
    assert similarity(define("refund", BODY), define("repay", BODY)) == 1.0


def test_a_sketch_is_bounded_and_a_huge_body_is_cut() -> None:
    huge = "".join(f"x{i} = {i}\n" for i in range(MAX_FINGERPRINT_TOKENS))  # 3 tokens a line
    shape, sketch = fingerprint(huge, "x0")
    assert len(sketch) == 8 * SKETCH_SIZE and shape
    assert fingerprint(huge + "tail = 1\n", "x0") == (shape, sketch)  # past the cap: not read
    assert len(fingerprint("def f(): pass", "f")[1]) == 8 * 4  # 6 tokens, 4 shingles
    assert fingerprint("", "f") == fingerprint("", "g")  # an empty body fingerprints too


def test_a_renamed_function_is_matched() -> None:
    plan = plan_moves(
        {"a.py": file(define("refund", BODY))}, {"a.py": file(define("repay", BODY))}, ["a.py"], {}
    )
    [move] = plan.symbols
    assert (move.old_name, move.new_name, move.why, move.same_body) == ("refund", "repay", "renamed", True)


def test_a_function_moved_to_another_file_is_matched() -> None:
    before = {"a.py": file(define("refund", BODY), define("greet", OTHER))}
    after = {"a.py": file(define("greet", OTHER)), "b.py": file(define("refund", BODY))}
    [move] = plan_moves(before, after, ["a.py", "b.py"], {}).symbols
    assert (move.old_path, move.new_path, move.why) == ("a.py", "b.py", "moved")


def test_a_small_edit_still_matches_but_is_not_the_same_body() -> None:
    edited = BODY.replace("total - order.refunded", "total - order.refunded_total")
    [move] = plan_moves(
        {"a.py": file(define("refund", BODY))}, {"a.py": file(define("repay", edited))}, ["a.py"], {}
    ).symbols
    assert SIMILARITY_MIN <= move.similarity < 1.0
    assert not move.same_body


def test_a_rename_with_a_rewritten_body_is_not_matched() -> None:
    plan = plan_moves(
        {"a.py": file(define("refund", BODY))}, {"a.py": file(define("repay", OTHER))}, ["a.py"], {}
    )
    assert plan.symbols == [] and plan.ambiguous == []


def test_another_kind_is_never_matched() -> None:
    plan = plan_moves(
        {"a.py": file(define("refund", BODY))},
        {"a.py": file(define("Refund", BODY, kind="class"))},
        ["a.py"],
        {},
    )
    assert plan.symbols == []


def test_two_alike_candidates_are_ambiguous_and_nothing_moves() -> None:
    plan = plan_moves(
        {"a.py": file(define("refund", BODY))},
        {"a.py": file(define("repay", BODY), define("pay_back", BODY))},
        ["a.py"],
        {},
    )
    assert plan.symbols == []
    assert plan.ambiguous_count == 1
    assert "refund" in plan.ambiguous[0] and "a.py::pay_back" in plan.ambiguous[0]


def test_two_removed_symbols_alike_one_added_are_ambiguous() -> None:
    plan = plan_moves(
        {"a.py": file(define("refund", BODY), define("refund_all", BODY))},
        {"a.py": file(define("repay", BODY))},
        ["a.py"],
        {},
    )
    assert plan.symbols == [] and plan.ambiguous_count == 2


def test_a_renamed_file_carries_its_symbols_even_when_edited() -> None:
    before = {"old.py": file(define("refund", BODY))}
    after = {"new.py": file(define("refund", OTHER))}
    [move] = plan_moves(before, after, ["old.py", "new.py"], {"old.py": "new.py"}).symbols
    assert (move.new_path, move.why, move.same_body) == ("new.py", "moved with its file", False)


def test_file_moves_take_git_renames_then_unique_identical_bytes() -> None:
    removed = {"a.py": "h1", "b.py": "h2", "c.py": "h3", "d.py": "h3"}
    added = {"x.py": "h9", "y.py": "h2", "z.py": "h3"}
    assert file_moves(removed, added, {"a.py": "x.py", "q.py": "r.py"}) == {"a.py": "x.py", "b.py": "y.py"}


def test_only_the_declared_name_is_normalised() -> None:
    before = 'def apply(order):\n    log("refund " + order.id)\n    return order.total\n'
    after = 'def refund(order):\n    log("refund " + order.id)\n    return order.total\n'
    assert fingerprint(before, "apply")[0] == fingerprint(after, "refund")[0]
    assert fingerprint(before, "apply")[0] != fingerprint(before.replace("total", "sum"), "apply")[0]
