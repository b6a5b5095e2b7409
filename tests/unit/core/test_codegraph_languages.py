"""How ``ProjectCode.edges`` keeps a call in its language family: a JavaScript ``on()`` is none of
the project's Python ``on``s (nor the reverse), whatever the confidence, and a name defined in
another language counts as none of a call's candidates."""

from __future__ import annotations

import pytest

from graphmem.core.code import CallRef, Definition, ImportRef, ParsedFile
from graphmem.core.codegraph import ProjectCode


def _function(name: str) -> Definition:
    return Definition("function", name, name, 1, 2, f"function {name}()", None, "h", None)


def _file(
    language: str, *names: str, calls: tuple[CallRef, ...] = (), imports: tuple[ImportRef, ...] = ()
) -> ParsedFile:
    return ParsedFile(language, tuple(_function(n) for n in names), calls, imports, (), 0)


def _calls(files: dict[str, ParsedFile]) -> set[tuple[str, str, str]]:
    """Each call as (caller path::name, callee path::name, confidence)."""
    return {
        (c.caller.split("::", 1)[1], c.callee.split("::", 1)[1], c.confidence)
        for c in ProjectCode("/p", files).edges().calls
    }


@pytest.mark.parametrize(
    ("defining", "calling"),
    [(("a.py", "python"), ("b.js", "javascript")), (("a.js", "javascript"), ("b.py", "python"))],
)
def test_a_call_reaches_no_function_of_another_language_by_its_name(
    defining: tuple[str, str], calling: tuple[str, str]
) -> None:
    (defined_in, defined_language), (caller_in, caller_language) = defining, calling
    other = defined_in.replace("a.", "a2.")
    files = {
        defined_in: _file(defined_language, "on", "render"),
        other: _file(defined_language, "render"),  # `render` in two files: an ambiguous name
        caller_in: _file(
            caller_language,
            "start",
            calls=(CallRef("on", None, 3, "start"), CallRef("render", "x", 4, "start")),
        ),
    }

    assert _calls(files) == set()


def test_a_script_importing_a_file_of_another_language_calls_none_of_its_code() -> None:
    files = {
        "view.py": _file("python", "draw"),
        "app.js": _file(
            "javascript",
            "start",
            calls=(CallRef("draw", None, 3, "start"),),
            imports=(ImportRef("./view.py", ("draw",), None, 1),),
        ),
    }

    edges = ProjectCode("/p", files).edges()

    assert edges.calls == []
    assert edges.imports == [("app.js", "view.py")]  # the file it names, still


def test_each_language_resolves_as_if_the_others_were_not_in_the_project() -> None:
    python = {
        "p1.py": _file("python", "render"),
        "p2.py": _file("python", "run"),
        "p3.py": _file("python", "run"),
        "app.py": _file(
            "python", "main", calls=(CallRef("render", "x", 3, "main"), CallRef("run", "x", 4, "main"))
        ),
    }
    scripts = {  # JavaScript, TypeScript and TSX call each other's
        "j1.tsx": _file("tsx", "render"),
        "j2.js": _file("javascript", "run"),
        "j3.ts": _file("typescript", "run"),
        "app.js": _file(
            "javascript",
            "start",
            calls=(CallRef("render", "x", 3, "start"), CallRef("run", None, 4, "start")),
        ),
    }
    native = {  # C++ calls what the C headers declare
        "util.h": _file("c", "render"),
        "main.cpp": _file("cpp", "go", calls=(CallRef("render", None, 3, "go"),)),
    }

    calls = _calls(python | scripts | native)

    assert calls == _calls(python) | _calls(scripts) | _calls(native)
    assert calls == {
        ("app.py::main", "p1.py::render", "unique_name"),
        ("app.py::main", "p2.py::run", "ambiguous"),
        ("app.py::main", "p3.py::run", "ambiguous"),
        ("app.js::start", "j1.tsx::render", "unique_name"),
        ("app.js::start", "j2.js::run", "ambiguous"),
        ("app.js::start", "j3.ts::run", "ambiguous"),
        ("main.cpp::go", "util.h::render", "unique_name"),
    }
