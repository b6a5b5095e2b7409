"""The tree-sitter code parser on the example sources in samples/code/<language>/.

Each language has a realistic sample (a class whose method calls another through
self/this, a free function calling an imported one, imports, inheritance, a constant, a
nested definition), a second file for the syntax its query also covers, and a file with a
syntax error. Every pattern of every tag query must match something in the samples.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tree_sitter import Language, Query, QueryCursor
from tree_sitter_language_pack import get_language, get_parser

from graphmem.adapters import code_headers, code_parser
from graphmem.adapters.code_parser import TreeSitterParser, body_hash, query_text
from graphmem.core.code import LANGUAGES, ParsedFile
from graphmem.errors import InvalidInputError

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "samples" / "code"
QUERIES = ROOT / "queries"

Defs = set[tuple[str, str]]

DEFINITIONS: dict[tuple[str, str], Defs] = {
    ("python", "refunds.py"): {
        ("constant", "MAX_REFUND_CENTS"),
        ("class", "RefundError"),
        ("class", "RefundService"),
        ("constant", "RefundService.LIMIT"),
        ("method", "RefundService.__init__"),
        ("method", "RefundService.apply"),
        ("method", "RefundService.validate"),
        ("class", "RefundService.Receipt"),
        ("method", "RefundService.Receipt.render"),
        ("function", "refund_all"),
        ("function", "refund_all.one"),
        ("function", "default_service"),
    },
    ("python", "queue.py"): {
        ("type", "RefundId"),
        ("class", "RefundQueue"),
        ("method", "RefundQueue.next_id"),
    },
    ("typescript", "refunds.ts"): {
        ("constant", "MAX_REFUND_CENTS"),
        ("interface", "Refundable"),
        ("method", "Refundable.refund"),
        ("interface", "AuditedRefundable"),
        ("method", "AuditedRefundable.audit"),
        ("type", "RefundId"),
        ("type", "RefundState"),
        ("class", "RefundService"),
        ("method", "RefundService.constructor"),
        ("method", "RefundService.refund"),
        ("method", "RefundService.validate"),
        ("function", "refundAll"),
        ("function", "refundAll.one"),
        ("function", "formatRefund"),
        ("module", "Refunds"),
        ("function", "Refunds.total"),
    },
    ("typescript", "processor.ts"): {
        ("constant", "MAX_BATCH"),
        ("function", "audit"),
        ("function", "refundIds"),
        ("class", "Processor"),
        ("method", "Processor.process"),
        ("method", "Processor.handle"),
        ("constant", "archive"),
    },
    ("tsx", "RefundList.tsx"): {
        ("constant", "PAGE_SIZE"),
        ("interface", "Props"),
        ("function", "RefundList"),
        ("function", "RefundList.next"),
        ("class", "RefundTable"),
        ("method", "RefundTable.render"),
        ("method", "RefundTable.rows"),
    },
    ("tsx", "RefundForm.tsx"): {
        ("constant", "MAX_AMOUNT"),
        ("function", "track"),
        ("type", "FormState"),
        ("type", "Step"),
        ("interface", "FormProps"),
        ("method", "FormProps.onDone"),
        ("interface", "ConfirmProps"),
        ("module", "Forms"),
        ("function", "Forms.steps"),
        ("class", "BaseForm"),
        ("method", "BaseForm.submit"),
        ("class", "RefundForm"),
        ("method", "RefundForm.validate"),
        ("method", "RefundForm.onSubmit"),
        ("method", "RefundForm.submit"),
        ("method", "RefundForm.render"),
        ("function", "AmountField"),
    },
    ("javascript", "refunds.js"): {
        ("constant", "MAX_REFUND_CENTS"),
        ("class", "RefundService"),
        ("method", "RefundService.constructor"),
        ("method", "RefundService.refund"),
        ("method", "RefundService.validate"),
        ("function", "refundAll"),
        ("function", "refundAll.one"),
        ("function", "receiptPath"),
        ("method", "RefundService.prototype.total"),
        ("method", "RefundService.prototype.count"),
        ("method", "RefundService.prototype.size"),
    },
    ("javascript", "RefundBadge.jsx"): {
        ("constant", "COLORS"),
        ("function", "badgeIds"),
        ("class", "RefundBadge"),
        ("method", "RefundBadge.onClick"),
        ("method", "RefundBadge.render"),
    },
    ("go", "refunds.go"): {
        ("constant", "MaxRefundCents"),
        ("interface", "Refunder"),
        ("method", "Refunder.Refund"),
        ("type", "RefundService"),
        ("type", "RefundID"),
        ("method", "RefundService.Refund"),
        ("method", "RefundService.validate"),
        ("function", "RefundAll"),
        ("type", "RefundAll.result"),
    },
    ("go", "audit.go"): {
        ("interface", "AuditedRefunder"),
        ("method", "AuditedRefunder.Audit"),
    },
    ("rust", "refunds.rs"): {
        ("constant", "MAX_REFUND_CENTS"),
        ("interface", "Refundable"),
        ("method", "Refundable.refund"),
        ("type", "RefundService"),
        ("type", "RefundError"),
        ("method", "RefundService.new"),
        ("method", "RefundService.validate"),
        ("method", "RefundService.refund"),
        ("function", "refund_all"),
        ("function", "refund_all.one"),
        ("module", "receipts"),
        ("type", "receipts.ReceiptId"),
        ("function", "receipts.render"),
    },
    ("rust", "macros.rs"): {
        ("function", "cents"),
        ("interface", "Audited"),
        ("method", "Audited.audit"),
        ("constant", "Receipt.VERSION"),
        ("method", "Receipt.parse"),
    },
    ("java", "RefundService.java"): {
        ("class", "RefundService"),
        ("constant", "RefundService.MAX_REFUND_CENTS"),
        ("method", "RefundService.RefundService"),
        ("method", "RefundService.refund"),
        ("method", "RefundService.validate"),
        ("method", "RefundService.refundAll"),
        ("class", "RefundService.Receipt"),
        ("method", "RefundService.Receipt.render"),
        ("interface", "Refundable"),
        ("method", "Refundable.refund"),
        ("type", "RefundState"),
    },
    ("java", "RefundRecord.java"): {
        ("class", "RefundRecord"),
        ("method", "RefundRecord.cents"),
        ("interface", "Audited"),
        ("interface", "Auditable"),
        ("constant", "Auditable.VERSION"),
    },
    ("c", "refund.c"): {
        ("constant", "MAX_REFUND_CENTS"),
        ("constant", "RETRY_LIMIT"),
        ("type", "refund_t"),
        ("type", "refund"),
        ("type", "refund_state"),
        ("type", "refund_service"),
        ("type", "refund_service.gateway_config"),
        ("function", "validate"),
        ("function", "refund_apply"),
    },
    ("c", "refund.h"): {
        ("function", "CENTS"),
        ("function", "refund_label"),
    },
    ("cpp", "refund_service.cpp"): {
        ("module", "payments"),
        ("constant", "payments.kMaxRefundCents"),
        ("class", "payments.RefundService"),
        ("method", "payments.RefundService.RefundService"),
        ("method", "payments.RefundService.apply"),
        ("type", "payments.RefundService.Receipt"),
        ("method", "payments.RefundService.Receipt.render"),
        ("method", "payments.RefundService.validate"),
        ("function", "payments.refund_all"),
        ("type", "payments.RefundId"),
    },
    ("cpp", "receipt.hpp"): {
        ("constant", "RECEIPT_VERSION"),
        ("function", "RECEIPT_LINE"),
        ("type", "receipt_id"),
        ("class", "Receipt"),
        ("constant", "Receipt.kMaxLines"),
        ("method", "Receipt.lines"),
        ("method", "Receipt.title"),
        ("function", "make_receipt"),
    },
    ("ruby", "refund_service.rb"): {
        ("module", "Payments"),
        ("constant", "Payments.MAX_REFUND_CENTS"),
        ("class", "Payments.RefundService"),
        ("method", "Payments.RefundService.initialize"),
        ("method", "Payments.RefundService.refund"),
        ("method", "Payments.RefundService.build"),
        ("method", "Payments.RefundService.validate"),
        ("method", "Payments.refund_all"),
        ("function", "receipt_json"),
    },
    ("php", "RefundService.php"): {
        ("module", "App.Payments"),
        ("constant", "App.Payments.MAX_REFUND_CENTS"),
        ("interface", "App.Payments.Refundable"),
        ("method", "App.Payments.Refundable.refund"),
        ("class", "App.Payments.RefundService"),
        ("constant", "App.Payments.RefundService.LIMIT"),
        ("method", "App.Payments.RefundService.__construct"),
        ("method", "App.Payments.RefundService.refund"),
        ("method", "App.Payments.RefundService.validate"),
        ("function", "App.Payments.refund_all"),
        ("type", "App.Payments.Audited"),
        ("method", "App.Payments.Audited.audit"),
    },
    ("php", "legacy.php"): {
        ("module", "App.Legacy"),
        ("class", "App.Legacy.LegacyRefunds"),
        ("method", "App.Legacy.LegacyRefunds.run"),
    },
    ("kotlin", "RefundService.kt"): {
        ("constant", "MAX_REFUND_CENTS"),
        ("interface", "Refundable"),
        ("method", "Refundable.refund"),
        ("class", "RefundService"),
        ("method", "RefundService.refund"),
        ("method", "RefundService.validate"),
        ("constant", "RefundService.LIMIT"),
        ("method", "RefundService.create"),
        ("function", "refundAll"),
        ("function", "refundAll.one"),
        ("class", "Receipts"),
        ("method", "Receipts.render"),
        ("type", "RefundId"),
    },
    ("kotlin", "Extensions.kt"): {
        ("type", "RefundState"),
        ("method", "Refund.units"),
    },
    ("csharp", "RefundService.cs"): {
        ("module", "Example.Payments"),
        ("interface", "Example.Payments.IRefundable"),
        ("method", "Example.Payments.IRefundable.Refund"),
        ("class", "Example.Payments.RefundService"),
        ("constant", "Example.Payments.RefundService.MaxRefundCents"),
        ("method", "Example.Payments.RefundService.RefundService"),
        ("method", "Example.Payments.RefundService.Refund"),
        ("method", "Example.Payments.RefundService.Validate"),
        ("method", "Example.Payments.RefundService.RefundAll"),
        ("function", "Example.Payments.RefundService.RefundAll.One"),
        ("class", "Example.Payments.RefundService.Receipt"),
        ("method", "Example.Payments.RefundService.Receipt.Render"),
        ("type", "Example.Payments.RefundState"),
        ("type", "Example.Payments.Money"),
    },
    ("csharp", "Legacy.cs"): {
        ("module", "Example.Legacy"),
        ("class", "Example.Legacy.LegacyRefunds"),
        ("method", "Example.Legacy.LegacyRefunds.Run"),
    },
}

# (name, receiver, caller): the self/this call, the call of an imported function, and others.
CALLS: dict[tuple[str, str], set[tuple[str, str | None, str | None]]] = {
    ("python", "refunds.py"): {
        ("validate", "self", "RefundService.apply"),
        ("gateway_charge", None, "refund_all.one"),
        ("join", "osp", "RefundService.Receipt.render"),
        ("getLogger", "logging", None),
        ("one", None, "refund_all"),
    },
    ("typescript", "refunds.ts"): {
        ("validate", "this", "RefundService.refund"),
        ("charge", None, "refundAll.one"),
        ("RefundRecord", None, "RefundService.refund"),
        ("format", "log", "formatRefund"),
    },
    ("tsx", "RefundList.tsx"): {
        ("rows", "this", "RefundTable.render"),
        ("formatRefund", None, "RefundList"),
        ("useState", None, "RefundList"),
        ("setPage", None, "RefundList.next"),
    },
    ("tsx", "RefundForm.tsx"): {
        ("submit", "this", "RefundForm.onSubmit"),
        ("Layout", None, "RefundForm.render"),
        ("Field", None, "AmountField"),
        ("Options", "api", "RefundForm.submit"),
    },
    ("javascript", "refunds.js"): {
        ("validate", "this", "RefundService.refund"),
        ("charge", None, "refundAll.one"),
        ("join", "path", "receiptPath"),
        ("total", "this", "RefundService.prototype.count"),
        ("total", "this", "RefundService.prototype.size"),
    },
    ("javascript", "RefundBadge.jsx"): {
        ("Badge", None, "RefundBadge.render"),
        ("Amount", None, "RefundBadge.render"),
        ("Style", "theme", "RefundBadge.render"),
    },
    ("go", "refunds.go"): {
        ("validate", "s", "RefundService.Refund"),
        ("Charge", "gw", "RefundAll"),
        ("Sprintf", "fmt", "RefundService.validate"),
    },
    ("rust", "refunds.rs"): {
        ("validate", "self", "RefundService.refund"),
        ("charge", None, "refund_all.one"),
        ("new", "HashMap", "RefundService.new"),
        ("TooLarge", "RefundError", "RefundService.validate"),
        ("format", None, "receipts.render"),
    },
    ("rust", "macros.rs"): {
        ("parse", "text", "Receipt.parse"),
        ("cents", None, "Receipt.parse"),
    },
    ("java", "RefundService.java"): {
        ("validate", "this", "RefundService.refund"),
        ("charge", None, "RefundService.refundAll"),
        ("Refund", None, "RefundService.refund"),
        ("format", "String", "RefundService.Receipt.render"),
    },
    ("c", "refund.c"): {
        ("log", "svc", "refund_apply"),
        ("gateway_charge", None, "refund_apply"),
        ("validate", None, "refund_apply"),
    },
    ("cpp", "refund_service.cpp"): {
        ("validate", "this", "payments.RefundService.apply"),
        ("charge", "gateway", "payments.refund_all"),
        ("to_string", "std", "payments.RefundService.Receipt.render"),
    },
    ("cpp", "receipt.hpp"): {
        ("make_unique", "std", "make_receipt"),
        ("narrow", None, "make_receipt"),
        ("Receipt", "payments", "make_receipt"),
    },
    ("ruby", "refund_service.rb"): {
        ("validate", "self", "Payments.RefundService.refund"),
        ("generate", "JSON", "receipt_json"),
        ("charge", "Gateway", "Payments.refund_all"),
        ("new", "Refund", "Payments.RefundService.refund"),
    },
    ("php", "RefundService.php"): {
        ("validate", "$this", "App.Payments.RefundService.refund"),
        ("charge", None, "App.Payments.refund_all"),
        ("info", "Logger", "App.Payments.Audited.audit"),
        ("RefundModel", None, "App.Payments.RefundService.refund"),
    },
    ("kotlin", "RefundService.kt"): {
        ("validate", "this", "RefundService.refund"),
        ("charge", None, "refundAll.one"),
        ("default", "Gateway", "RefundService.create"),
        ("map", "payments", "refundAll"),
    },
    ("csharp", "RefundService.cs"): {
        ("Validate", "this", "Example.Payments.RefundService.Refund"),
        ("Charge", "Gw.Charges", "Example.Payments.RefundService.RefundAll.One"),
        ("One", None, "Example.Payments.RefundService.RefundAll"),
        ("ArgumentException", None, "Example.Payments.RefundService.Validate"),
    },
}

Import = tuple[str, tuple[str, ...], str | None]  # (module, names, alias)

IMPORTS: dict[tuple[str, str], set[Import]] = {
    ("python", "refunds.py"): {
        ("logging", (), None),
        ("os.path", (), "osp"),
        ("payments.gateway", ("charge",), "gateway_charge"),
        ("payments.models", ("Payment", "Refund"), None),
        (".base", ("BaseService",), None),
    },
    ("python", "queue.py"): {("payments.types", ("*",), None)},
    ("typescript", "refunds.ts"): {
        ("./gateway", ("charge",), None),
        ("./log", (), "log"),
        ("./models", ("Payment",), None),
        ("./models", ("Refund",), "RefundRecord"),
        ("./money", ("formatMoney",), None),
    },
    ("typescript", "processor.ts"): {("fs", (), "fs"), ("path", (), "path")},
    ("tsx", "RefundList.tsx"): {
        ("react", ("React", "useState"), None),
        ("./refunds", ("formatRefund",), None),
    },
    ("javascript", "refunds.js"): {
        ("./gateway.js", ("charge",), None),
        ("path", (), "path"),
        ("util", ("format",), "format"),
        ("fs", ("readFile",), None),
        ("fs", ("writeFile",), "write"),
    },
    ("javascript", "RefundBadge.jsx"): {("./money", ("formatMoney",), "money"), ("./theme", (), "theme")},
    ("go", "refunds.go"): {
        ("errors", (), None),
        ("fmt", (), None),
        ("example.com/payments/gateway", (), "gw"),
    },
    ("rust", "refunds.rs"): {
        ("std::collections", ("HashMap",), None),
        ("crate::gateway", ("charge",), None),
        ("crate::gateway", ("Gateway",), "Gw"),
    },
    ("rust", "macros.rs"): {
        ("serde", (), None),
        ("log", (), None),
        ("std", ("fmt",), "formatting"),
        ("std::io", ("*",), None),
    },
    ("java", "RefundService.java"): {
        ("java.util", ("ArrayList",), None),
        ("java.util", ("List",), None),
        ("com.example.gateway.Gateway", ("charge",), None),
    },
    ("java", "RefundRecord.java"): {("java.util", ("*",), None)},
    ("c", "refund.c"): {("stdio.h", (), None), ("gateway.h", (), None)},
    ("cpp", "refund_service.cpp"): {("string", (), None), ("gateway.hpp", (), None)},
    ("cpp", "receipt.hpp"): {("std", ("string",), None), ("payments", (), None)},
    ("ruby", "refund_service.rb"): {("json", (), None), ("gateway", (), None)},
    ("php", "RefundService.php"): {
        ("App\\Gateway", ("Client",), None),
        ("App\\Models", ("Refund",), "RefundModel"),
        ("App\\Gateway", ("charge",), None),
    },
    ("php", "legacy.php"): {
        ("App\\Models", ("Payment",), None),
        ("App\\Models", ("Refund",), "RefundModel"),
        ("bootstrap.php", (), None),
        ("/helpers.php", (), None),
    },
    ("kotlin", "RefundService.kt"): {
        ("com.example.gateway", ("charge",), None),
        ("com.example.models", ("Refund",), "RefundRecord"),
        ("kotlin.math", ("max",), None),
    },
    ("kotlin", "Extensions.kt"): {("com.example.models", ("*",), None)},
    ("csharp", "RefundService.cs"): {
        ("System", (), None),
        ("System.Collections.Generic", (), None),
        ("Example.Gateway", (), "Gw"),
    },
}

INHERITS: dict[tuple[str, str], set[tuple[str, str]]] = {
    ("python", "refunds.py"): {("RefundError", "Exception"), ("RefundService", "BaseService")},
    ("python", "queue.py"): {("RefundQueue", "list"), ("RefundQueue", "abc.ABC")},
    ("typescript", "refunds.ts"): {
        ("RefundService", "BaseService"),
        ("RefundService", "Refundable"),
        ("AuditedRefundable", "Refundable"),
    },
    ("tsx", "RefundList.tsx"): {("RefundTable", "React.Component")},
    ("tsx", "RefundForm.tsx"): {("RefundForm", "BaseForm"), ("RefundForm", "Validating")},
    ("javascript", "refunds.js"): {("RefundService", "BaseService")},
    ("go", "refunds.go"): {("RefundService", "BaseService")},
    ("go", "audit.go"): {("AuditedRefunder", "Refunder")},
    ("rust", "refunds.rs"): {("RefundService", "Refundable")},
    ("rust", "macros.rs"): {("Audited", "Refundable"), ("Audited", "std::fmt::Debug")},
    ("java", "RefundService.java"): {("RefundService", "BaseService"), ("RefundService", "Refundable")},
    ("java", "RefundRecord.java"): {("RefundRecord", "Auditable"), ("Auditable", "Comparable")},
    ("cpp", "refund_service.cpp"): {("payments.RefundService", "BaseService")},
    ("ruby", "refund_service.rb"): {
        ("Payments.RefundService", "BaseService"),
        ("Payments.RefundService", "Auditable"),
    },
    ("php", "RefundService.php"): {
        ("App.Payments.RefundService", "BaseService"),
        ("App.Payments.RefundService", "Refundable"),
    },
    ("php", "legacy.php"): {("App.Legacy.LegacyRefunds", "Audited")},
    ("kotlin", "RefundService.kt"): {("RefundService", "BaseService"), ("RefundService", "Refundable")},
    ("csharp", "RefundService.cs"): {
        ("Example.Payments.RefundService", "BaseService"),
        ("Example.Payments.RefundService", "IRefundable"),
    },
}

# The syntax-error file of each language and what is defined before the error.
BROKEN: dict[str, tuple[str, Defs]] = {
    "python": ("broken.py", {("function", "first"), ("class", "Good"), ("method", "Good.ok")}),
    "typescript": ("broken.ts", {("function", "first"), ("class", "Good"), ("method", "Good.ok")}),
    "tsx": ("Broken.tsx", {("function", "First"), ("class", "Good"), ("method", "Good.render")}),
    "javascript": ("broken.js", {("function", "first"), ("class", "Good"), ("method", "Good.ok")}),
    "go": ("broken.go", {("function", "First"), ("type", "Good"), ("method", "Good.Ok")}),
    "rust": ("broken.rs", {("function", "first"), ("type", "Good"), ("method", "Good.ok")}),
    "java": ("Broken.java", {("class", "Broken"), ("method", "Broken.first"), ("method", "Broken.ok")}),
    "c": ("broken.c", {("function", "first"), ("function", "ok")}),
    "cpp": ("broken.cpp", {("function", "first"), ("class", "Good"), ("method", "Good.ok")}),
    "ruby": ("broken.rb", {("function", "first"), ("class", "Good"), ("method", "Good.ok")}),
    "php": ("broken.php", {("function", "first"), ("class", "Good"), ("method", "Good.ok")}),
    "kotlin": ("Broken.kt", {("function", "first"), ("class", "Good"), ("method", "Good.ok")}),
    "csharp": ("Broken.cs", {("class", "Good"), ("method", "Good.First"), ("method", "Good.Ok")}),
}


@pytest.fixture(scope="module")
def parser() -> TreeSitterParser:
    return TreeSitterParser()  # one per module: each query is compiled once


@pytest.fixture(scope="module")
def parse(parser: TreeSitterParser) -> Callable[[str, str], ParsedFile]:
    def parse_sample(language: str, name: str) -> ParsedFile:
        return parser.parse((SAMPLES / language / name).read_bytes(), language)

    return parse_sample


def sample_files(language: str) -> list[Path]:
    return sorted(path for path in (SAMPLES / language).iterdir() if path.is_file())


# -- what each sample defines and references ------------------------------------------


@pytest.mark.parametrize(("language", "name"), sorted(DEFINITIONS))
def test_a_sample_yields_exactly_the_expected_definitions(
    parse: Callable[[str, str], ParsedFile], language: str, name: str
) -> None:
    parsed = parse(language, name)

    assert {(d.kind, d.qualified_name) for d in parsed.definitions} == DEFINITIONS[(language, name)]
    assert parsed.error_count == 0
    assert parsed.language == language


@pytest.mark.parametrize(("language", "name"), sorted(CALLS))
def test_a_sample_yields_the_expected_calls(
    parse: Callable[[str, str], ParsedFile], language: str, name: str
) -> None:
    calls = {(c.name, c.receiver, c.caller) for c in parse(language, name).calls}

    assert CALLS[(language, name)] <= calls


@pytest.mark.parametrize(("language", "name"), sorted(IMPORTS))
def test_a_sample_yields_the_expected_imports(
    parse: Callable[[str, str], ParsedFile], language: str, name: str
) -> None:
    imports = {(i.module, i.names, i.alias) for i in parse(language, name).imports}

    assert IMPORTS[(language, name)] <= imports


@pytest.mark.parametrize(("language", "name"), sorted(INHERITS))
def test_a_sample_yields_the_expected_inheritance(
    parse: Callable[[str, str], ParsedFile], language: str, name: str
) -> None:
    inherits = {(i.child, i.base) for i in parse(language, name).inherits}

    assert INHERITS[(language, name)] <= inherits


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_sample_file_of_a_language_is_checked(language: str) -> None:
    checked = {name for lang, name in DEFINITIONS if lang == language} | {BROKEN[language][0]}

    assert {path.name for path in sample_files(language)} == checked
    assert any(lang == language for lang, _ in CALLS)
    assert any(lang == language for lang, _ in IMPORTS)


def test_calls_and_inheritance_point_at_definitions_of_the_file(
    parse: Callable[[str, str], ParsedFile],
) -> None:
    for language, name in DEFINITIONS:
        parsed = parse(language, name)
        qualified = {d.qualified_name for d in parsed.definitions}
        callers = {c.caller for c in parsed.calls} - {None}
        children = {i.child for i in parsed.inherits}

        assert callers <= qualified, (language, name)
        assert children <= qualified | {"Receipt", "Refund"}, (language, name)  # Rust impl / Kotlin extension


def test_qualified_names_are_unique_in_each_sample(parse: Callable[[str, str], ParsedFile]) -> None:
    for language, name in DEFINITIONS:
        names = [d.qualified_name for d in parse(language, name).definitions]

        assert len(names) == len(set(names)), (language, name)


def test_parents_are_the_enclosing_qualified_names(parse: Callable[[str, str], ParsedFile]) -> None:
    parsed = parse("python", "refunds.py")
    parents = {d.qualified_name: d.parent for d in parsed.definitions}

    assert parents["RefundService"] is None
    assert parents["RefundService.apply"] == "RefundService"
    assert parents["RefundService.Receipt.render"] == "RefundService.Receipt"
    assert parents["refund_all.one"] == "refund_all"


def test_a_method_defined_outside_its_type_belongs_to_the_type(
    parse: Callable[[str, str], ParsedFile],
) -> None:
    go = {d.qualified_name: d for d in parse("go", "refunds.go").definitions}
    cpp = {d.qualified_name: d for d in parse("cpp", "refund_service.cpp").definitions}

    assert go["RefundService.validate"].parent == "RefundService"
    assert cpp["payments.RefundService.validate"].parent == "payments.RefundService"
    assert cpp["payments.RefundService.validate"].name == "validate"


# -- broken code --------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_syntax_error_keeps_the_definitions_before_it(
    parse: Callable[[str, str], ParsedFile], language: str
) -> None:
    name, before_error = BROKEN[language]

    parsed = parse(language, name)

    assert before_error <= {(d.kind, d.qualified_name) for d in parsed.definitions}
    assert parsed.error_count > 0


@pytest.mark.parametrize("language", LANGUAGES)
def test_garbage_input_never_raises(parser: TreeSitterParser, language: str) -> None:
    parsed = parser.parse(b"\x00\xff}{ )( class def fn func <?php ::: \xe2\x82", language)

    assert parsed.error_count > 0


def test_empty_input_gives_an_empty_file(parser: TreeSitterParser) -> None:
    assert parser.parse(b"", "python") == ParsedFile("python", (), (), (), (), 0)


def test_an_unknown_language_is_invalid_input(parser: TreeSitterParser) -> None:
    with pytest.raises(InvalidInputError, match=r"cobol.*python"):
        parser.parse(b"IDENTIFICATION DIVISION.", "cobol")


# -- identity, hashes, signatures, docstrings ---------------------------------------------

PYTHON_FUNCTION = b"""\
def refund(payment, amount):
    total = compute(payment.amount, amount, rounding="half-up")
    return Refund(payment.id, total)
"""
PYTHON_REFORMATTED = b"""\
def refund(payment,
           amount):
    total = compute(
        payment.amount,
        amount,
        rounding="half-up",
    )
    return Refund(payment.id,   total)
"""
PYTHON_EDITED = PYTHON_FUNCTION.replace(b"half-up", b"half-even")

GO_METHOD = b"""package p

func (s *Service) Refund(p Payment, amount int) error {
\tif amount > Max { return ErrTooLarge }
\treturn s.gateway.Charge(p, -amount)
}
"""
GO_REFORMATTED = b"""package p

func (s *Service) Refund(p Payment,
\tamount int) error {
\tif amount > Max {
\t\treturn ErrTooLarge
\t}

\treturn s.gateway.Charge(p,
\t\t-amount,
\t)
}
"""
GO_EDITED = GO_METHOD.replace(b"-amount", b"amount")


def only_definition(parser: TreeSitterParser, source: bytes, language: str) -> tuple[str, str]:
    (definition,) = parser.parse(source, language).definitions
    return definition.qualified_name, definition.body_hash


@pytest.mark.parametrize(
    ("language", "source", "reformatted", "edited"),
    [
        ("python", PYTHON_FUNCTION, PYTHON_REFORMATTED, PYTHON_EDITED),
        ("go", GO_METHOD, GO_REFORMATTED, GO_EDITED),
    ],
)
def test_body_hash_survives_reformatting_and_changes_with_the_body(
    parser: TreeSitterParser, language: str, source: bytes, reformatted: bytes, edited: bytes
) -> None:
    name, original = only_definition(parser, source, language)

    assert only_definition(parser, reformatted, language) == (name, original)
    assert only_definition(parser, edited, language)[1] != original


PROPERTY_WITH_SETTER = b"""\
class Account:
    @property
    def owner(self) -> str:
        return self._owner

    @owner.setter
    def owner(self, value: str) -> None:
        self._owner = value
"""


def test_a_property_and_its_setter_are_one_symbol_hashed_together(parser: TreeSitterParser) -> None:
    definitions = parser.parse(PROPERTY_WITH_SETTER, "python").definitions
    edited = PROPERTY_WITH_SETTER.replace(b"= value", b"= value.strip()")
    owner = {d.qualified_name: d for d in definitions}["Account.owner"]
    edited_owner = {d.qualified_name: d for d in parser.parse(edited, "python").definitions}["Account.owner"]

    assert [(d.kind, d.qualified_name) for d in definitions] == [
        ("class", "Account"),
        ("method", "Account.owner"),
    ]
    assert (owner.start_line, owner.signature) == (3, "def owner(self) -> str")
    assert edited_owner.body_hash != owner.body_hash


def test_overloads_are_one_symbol(parser: TreeSitterParser) -> None:
    source = b"""class Money {
  long cents(int units) { return units * 100L; }
  long cents(long units) { return units * 100; }
}
"""

    names = [d.qualified_name for d in parser.parse(source, "java").definitions]

    assert names == ["Money", "Money.cents"]


def test_body_hash_is_sixteen_hex_digits() -> None:
    digest = body_hash("def f(): pass")

    assert len(digest) == 16
    assert int(digest, 16) >= 0


def test_lines_added_above_change_lines_but_not_identity_or_hash(parser: TreeSitterParser) -> None:
    source = (SAMPLES / "python" / "refunds.py").read_bytes()
    shifted = source.replace(b"import logging\n", b"import logging\nimport json\n\n\n", 1)

    before = parser.parse(source, "python").definitions
    after = parser.parse(shifted, "python").definitions

    assert [(d.qualified_name, d.body_hash) for d in before] == [
        (d.qualified_name, d.body_hash) for d in after
    ]
    assert all(b.start_line + 3 == a.start_line for b, a in zip(before, after, strict=True))


def test_python_signatures_and_docstrings(parse: Callable[[str, str], ParsedFile]) -> None:
    defs = {d.qualified_name: d for d in parse("python", "refunds.py").definitions}

    apply = defs["RefundService.apply"]
    assert apply.signature == "def apply(self, payment: Payment, amount: int) -> Refund"
    assert apply.docstring == "Refund ``amount`` cents of ``payment``."
    assert (apply.start_line, apply.end_line) == (27, 31)
    assert defs["RefundService"].signature == "class RefundService(BaseService)"
    assert defs["RefundService"].docstring == "Applies refunds to payments through a gateway."
    # No docstring: the comment block directly above.
    assert (
        defs["RefundService.validate"].docstring
        == "Rejects refunds above the limit.\nCalled before every refund."
    )
    assert defs["MAX_REFUND_CENTS"].signature == "MAX_REFUND_CENTS = 100_000"
    assert defs["default_service"].signature == "def default_service() -> RefundService"
    assert defs["refund_all.one"].docstring is None


def test_brace_language_signatures_and_docstrings(parse: Callable[[str, str], ParsedFile]) -> None:
    java = {d.qualified_name: d for d in parse("java", "RefundService.java").definitions}
    go = {d.qualified_name: d for d in parse("go", "refunds.go").definitions}
    rust = {d.qualified_name: d for d in parse("rust", "refunds.rs").definitions}
    ts = {d.qualified_name: d for d in parse("typescript", "refunds.ts").definitions}

    assert (
        java["RefundService"].signature
        == "public class RefundService extends BaseService implements Refundable"
    )
    assert java["RefundService"].docstring == "Applies refunds through a gateway."
    assert java["RefundService.validate"].signature == "private void validate(long amount)"
    assert go["RefundService.Refund"].signature == (
        "func (s *RefundService) Refund(p Payment, amount int) (Refund, error)"
    )
    assert go["RefundService.Refund"].docstring == "Refund refunds amount cents of p."
    assert go["RefundService"].signature == "type RefundService struct"
    assert go["RefundService.validate"].docstring is None
    assert rust["RefundService"].docstring == "Applies refunds through a gateway."  # above #[derive]
    assert ts["RefundService"].docstring == "Applies refunds to payments through a gateway."
    assert ts["formatRefund"].signature == "export const formatRefund = (refund: RefundRecord): string"


def test_a_trailing_comment_of_the_line_above_is_not_a_docstring(parser: TreeSitterParser) -> None:
    source = b"x = compute()  # the total\ndef f():\n    return x\n"

    (definition,) = parser.parse(source, "python").definitions

    assert definition.docstring is None


def test_signature_and_docstring_are_bounded(parser: TreeSitterParser) -> None:
    params = ", ".join(f"argument_{i}: int" for i in range(40))
    source = f'def wide({params}) -> None:\n    """{"word " * 300}"""\n'.encode()

    (definition,) = parser.parse(source, "python").definitions

    assert len(definition.signature) <= code_headers.SIGNATURE_MAX_CHARS
    assert definition.signature.startswith("def wide(argument_0: int")
    assert definition.docstring is not None
    assert len(definition.docstring) <= code_headers.DOCSTRING_MAX_CHARS


# -- the queries ----------------------------------------------------------------------


def test_there_is_one_query_file_per_language() -> None:
    assert sorted(path.stem for path in QUERIES.glob("*.scm")) == sorted(LANGUAGES)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_packaged_query_is_the_one_in_the_queries_folder(language: str) -> None:
    assert query_text(language) == (QUERIES / f"{language}.scm").read_text(encoding="utf-8")


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_pattern_of_a_query_matches_a_sample(language: str) -> None:
    query = Query(get_language(language), query_text(language))  # type: ignore[arg-type]
    grammar = get_parser(language)  # type: ignore[arg-type]
    matched: set[int] = set()

    for path in sample_files(language):
        for index, captures in QueryCursor(query).matches(grammar.parse(path.read_bytes()).root_node):
            roles = [key for key in captures if key.startswith(("definition.", "reference."))]
            assert len(roles) == 1, (path.name, index, sorted(captures))
            matched.add(index)

    text = query_text(language)
    unmatched = [
        text[query.start_byte_for_pattern(i) : query.end_byte_for_pattern(i)]
        for i in range(query.pattern_count)
        if i not in matched
    ]
    assert query.pattern_count > 0
    assert not unmatched, f"{language}.scm patterns that match no sample:\n" + "\n".join(unmatched)


def test_each_query_is_compiled_once_per_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []

    def counting_query(language: Language, source: str) -> Query:
        compiled.append(source)
        return Query(language, source)

    monkeypatch.setattr(code_parser, "Query", counting_query)
    parser = TreeSitterParser()
    for _ in range(3):
        parser.parse(b"def f():\n    g()\n", "python")
        parser.parse(b"fn f() { g(); }\n", "rust")

    assert len(compiled) == 2


REFUNDS = '''class {name}(Service):
    """Gives money back."""

    def apply(self, order_id, amount):
        total = round_half_even(amount)
        self.log(f"refund {{order_id}}: {{total}}")
        return self.fee(total)

    def fee(self, total):
        return total * {rate}
'''


def test_a_class_renamed_has_the_same_shape_and_an_edited_member_changes_it(
    parser: TreeSitterParser,
) -> None:
    def shapes(source: str) -> dict[str, str]:
        found = parser.parse(source.encode(), "python").definitions
        return {d.qualified_name.split(".", 1)[-1]: d.shape for d in found}

    before = shapes(REFUNDS.format(name="RefundService", rate="0.99"))
    renamed = shapes(REFUNDS.format(name="Refunds", rate="0.99"))
    edited = shapes(REFUNDS.format(name="RefundService", rate="0.98"))

    assert before["RefundService"] == renamed["Refunds"]  # only the declared name changed
    assert before["apply"] == renamed["apply"] == edited["apply"]
    assert before["fee"] != edited["fee"] and before["RefundService"] != edited["RefundService"]
    assert all(
        len(d.sketch) % 8 == 0 and d.sketch
        for d in parser.parse(REFUNDS.format(name="R", rate="1").encode(), "python").definitions
    )


# -- hostile sources ------------------------------------------------------------------


def test_a_nul_in_the_source_is_read_as_a_replacement_character(parser: TreeSitterParser) -> None:
    # PostgreSQL refuses a NUL in text: one in a signature failed every pass of the project
    source = b'function f(a = "\x00") { return g("\x00"); }\n'

    parsed = parser.parse(source, "javascript")

    (definition,) = parsed.definitions
    assert definition.signature == 'function f(a = "\ufffd")'
    assert "\x00" not in repr(parsed)


def test_definitions_nested_too_deep_to_name_are_left_out_with_what_they_hold(
    parser: TreeSitterParser,
) -> None:
    # Each qualified name repeats its enclosing ones: 3,000 classes nested in methods named
    # 36 million characters (a 280 KB file, 1.1 GB in memory)
    depth = 3000
    source = b"class a { m() { g();" * depth + b"} }" * depth

    parsed = parser.parse(source, "javascript")

    names = [d.qualified_name for d in parsed.definitions]
    assert names[:2] == ["a", "a.m"]
    assert max(len(name) for name in names) <= code_parser.QUALIFIED_NAME_MAX_CHARS
    assert len(names) < code_parser.QUALIFIED_NAME_MAX_CHARS
    # the calls inside them are the deepest kept method's
    assert {call.caller for call in parsed.calls[len(names) // 2 :]} == {names[-1]}


def test_a_name_longer_than_the_bound_is_no_symbol(parser: TreeSitterParser) -> None:
    source = b"def " + b"a" * 100_000 + b"():\n    helper()\n\ndef helper():\n    pass\n"

    parsed = parser.parse(source, "python")

    assert [d.qualified_name for d in parsed.definitions] == ["helper"]
    assert [(c.name, c.caller) for c in parsed.calls] == [("helper", None)]


def test_a_base_of_deeply_nested_generics_is_read_in_linear_time(parser: TreeSitterParser) -> None:
    depth = 30_000  # 60 KB: a quarter of a minute when each pass stripped the innermost pair
    source = b"class C extends " + b"A<" * depth + b"B" + b">" * depth + b" { void f() {} }\n"

    started = time.perf_counter()
    parsed = parser.parse(source, "java")

    assert time.perf_counter() - started < 3
    assert [(i.child, i.base) for i in parsed.inherits] == [("C", "A")]
