"""Which code a question describes: BM25 over symbol names split into words and docstrings."""

from __future__ import annotations

from graphmem.core.code import Definition, ParsedFile
from graphmem.core.code_search import SymbolIndex, stem, terms


def _definition(qualified_name: str, docstring: str | None, kind: str = "function") -> Definition:
    name = qualified_name.rsplit(".", 1)[-1]
    return Definition(kind, name, qualified_name, 1, 2, f"def {name}()", docstring, "h", None)


def _index(*definitions: Definition) -> SymbolIndex:
    parsed = ParsedFile("python", tuple(definitions), (), (), (), 0)
    return SymbolIndex("/src/web", {"src/web/sessions.py": parsed})


WEB = _index(
    _definition("should_strip_auth", "Decide whether the Authorization header is removed on redirect."),
    _definition("Session.rebuild_proxies", "Rebuild the proxy configuration for a redirected request."),
    _definition("get_netrc_auth", "Return the credentials for a host from the user's netrc file."),
    _definition("Session", "A requests session: cookie persistence and connection pooling.", kind="class"),
    _definition("merge_setting", "Merge a request setting with the session's."),
)


def test_words_of_identifiers_and_their_forms_are_terms() -> None:
    assert terms("should_strip_auth") == ["should", "strip", "auth"]
    assert terms("HTTPAdapter getAppDir") == ["http", "adapter", "get", "app", "dir"]
    assert stem("stripped") == stem("strip") == "strip"
    assert stem("files") == "file"


def test_a_question_that_describes_a_behaviour_finds_its_symbol_first() -> None:
    found = WEB.search("when is the Authorization header stripped on a redirect")

    assert found[0].qualified_name == "should_strip_auth"
    assert found[0].key == "Symbol:/src/web::src/web/sessions.py::should_strip_auth"


def test_a_question_about_what_no_code_says_describes_nothing() -> None:
    assert WEB.search("which package manager do we prefer for the monorepo") == []


def test_one_shared_word_is_not_a_description() -> None:
    assert WEB.search("session") == []
