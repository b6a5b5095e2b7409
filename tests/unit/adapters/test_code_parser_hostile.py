"""The tree-sitter code parser on sources written to hurt it: it ends in time linear in the
file, and what it reports is what a store accepts (``adapters/code_parser.py``).

Each file here took minutes or more before its fix: a hang fails by the unit time limit
(tests/unit/conftest.py), once tree-sitter's C code gives the interpreter back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.adapters.code_parser import ParseTimeoutError, TreeSitterParser
from graphmem.core.code import language_for, parsed_to_json

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "code"


@pytest.fixture(scope="module")
def parser() -> TreeSitterParser:
    return TreeSitterParser()


# -- time -----------------------------------------------------------------------------


def test_definitions_nested_deep_in_expressions_are_read_in_linear_time(parser: TreeSitterParser) -> None:
    # each function's signature and comment were looked for walking its ancestors up from the
    # root again: 4,000 of them took 4.4 s, these 20,000 (550 KB) minutes
    depth = 20_000
    source = "".join(f"f(a.b{i} = function(){{}}, " for i in range(depth)).encode() + b"0" + b")" * depth

    parsed = parser.parse(source, "javascript")

    first = parsed.definitions[0]
    assert (first.qualified_name, first.kind, first.signature) == ("a.b0", "method", "a.b0 = function()")


def test_a_comment_block_of_a_megabyte_is_read_in_linear_time(parser: TreeSitterParser) -> None:
    # each line of the block was found walking the file's top level from its first line:
    # 100,000 lines took 70 s, these 200,000 more than five minutes
    source = b"// c\n" * 200_000 + b"function documented() {}\n"

    (definition,) = parser.parse(source, "javascript").definitions

    assert definition.docstring is not None
    assert definition.docstring.startswith("c\nc\nc")


def test_a_chain_of_calls_deeper_than_the_query_engine_counts_ends_and_what_follows_is_read(
    parser: TreeSitterParser,
) -> None:
    # tree-sitter's query kept a partial match open per call of the chain (10,000 calls: 35 s),
    # and counts depth on 16 bits: this chain is 80,000 deep, and took minutes
    source = b"x" + b".f()" * 40_000 + b";\nfunction after() { g(); }\n"

    parsed = parser.parse(source, "javascript")

    assert [d.qualified_name for d in parsed.definitions] == ["after"]
    assert ("g", "after") in {(call.name, call.caller) for call in parsed.calls}
    assert {call.name for call in parsed.calls} == {"f", "g"}


def test_a_parse_past_its_time_raises_and_the_parser_parses_the_next_file_afresh(
    parser: TreeSitterParser,
) -> None:
    big = b"function a() { return b(1); }\n" * 20_000
    small = b"function c() { d(); }\n"

    with pytest.raises(ParseTimeoutError):
        parser.parse(big, "javascript", timeout_s=0)

    assert parser.parse(small, "javascript") == TreeSitterParser().parse(small, "javascript")


def test_a_parse_given_time_gives_what_a_parse_without_a_limit_gives(parser: TreeSitterParser) -> None:
    for path in sorted(SAMPLES.rglob("*")):
        language = language_for(path.name)
        if language is None:
            continue
        source = path.read_bytes()

        assert parser.parse(source, language, timeout_s=600) == parser.parse(source, language), path


# -- names ----------------------------------------------------------------------------

ESCAPED = [
    ("javascript", b"function \\u0061bc() {}\n\\u0061bc();\n"),
    ("typescript", b"function \\u{61}bc(): void {}\n\\u0061bc();\n"),
    ("tsx", b"function \\u0061bc() {}\n\\u0061bc();\n"),
    ("c", b"int \\u0061bc(void) { return 0; }\nint main(void) { return \\u0061bc(); }\n"),
    ("cpp", b"int \\U00000061bc() { return 0; }\nint main() { return \\u0061bc(); }\n"),
    ("csharp", b"class \\u0061bc { void \\u0061bc2() { \\u0061bc(); } }\n"),
]


@pytest.mark.parametrize(("language", "source"), ESCAPED, ids=[language for language, _ in ESCAPED])
def test_an_escaped_identifier_is_stored_decoded(
    parser: TreeSitterParser, language: str, source: bytes
) -> None:
    parsed = parser.parse(source, language)

    assert parsed.definitions[0].qualified_name == "abc"
    assert "abc" in {call.name for call in parsed.calls}


@pytest.mark.parametrize(
    "escaped",
    [
        "\\ud83dy",  # half of a UTF-16 pair: no store takes it decoded
        "\\ud83d\\ude00",  # a pair, each half an escape of its own: not an identifier in JavaScript
        "\\u{1F600}y",  # a character no identifier may hold
        "y\\u0000",  # a NUL
        "y\\u{110000}",  # past Unicode
    ],
)
def test_an_identifier_escaping_what_no_identifier_holds_is_stored_as_written(
    parser: TreeSitterParser, escaped: str
) -> None:
    source = f"function {escaped}() {{}}\n".encode()

    parsed = parser.parse(source, "javascript")

    assert [d.qualified_name for d in parsed.definitions] == [escaped]
    assert parsed_to_json(parsed).encode("utf-8")  # a store takes it


def test_an_escaped_dot_does_not_make_a_method_of_what_is_before_it(parser: TreeSitterParser) -> None:
    (definition,) = parser.parse(b"function a\\u002eb() {}\n", "javascript").definitions

    assert (definition.qualified_name, definition.kind, definition.parent) == ("a\\u002eb", "function", None)


@pytest.mark.parametrize("language", ["javascript", "python", "go"])
def test_an_import_of_a_module_named_longer_than_a_store_keys_is_none(
    parser: TreeSitterParser, language: str
) -> None:
    # an external module is keyed by its name: PostgreSQL refuses an index entry over 2,704 bytes
    name = "m" * 10_000
    source = {
        "javascript": f'import x from "{name}";\nimport y from "short";\n',
        "python": f"import {name}\nimport short\n",
        "go": f'package p\nimport "{name}"\nimport "short"\n',
    }[language].encode()

    parsed = parser.parse(source, language)

    assert [i.module for i in parsed.imports] == ["short"]
