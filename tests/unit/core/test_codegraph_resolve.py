"""How ``ProjectCode.edges`` resolves a call when its name is defined in many files: through the
import first, then in the caller's own file, never "the first candidate"."""

from __future__ import annotations

from graphmem.core.code import CallRef, Definition, ImportRef, ParsedFile
from graphmem.core.codegraph import ProjectCode, symbol_key


def _function(name: str, parent: str | None = None, kind: str = "") -> Definition:
    qualified = f"{parent}.{name}" if parent else name
    kind = kind or ("method" if parent else "function")
    return Definition(kind, name, qualified, 1, 2, f"def {name}()", None, "h", parent)


def _module(
    *calls: CallRef, imports: tuple[ImportRef, ...] = (), extra: tuple[Definition, ...] = ()
) -> ParsedFile:
    return ParsedFile("python", (_function("run"), _function("main"), *extra), calls, imports, (), 0)


def test_a_name_every_module_defines_resolves_through_the_import_and_then_in_the_callers_file() -> None:
    files = {f"pkg/mod{i}.py": _module() for i in range(6)}
    files["pkg/app.py"] = _module(
        CallRef("run", None, 3, "main"),  # imported from mod4: that one
        CallRef("main", None, 4, "run"),  # defined here: this file's
        CallRef("step", "self", 5, "Worker.go"),  # the class's own method, not mod5's
        imports=(ImportRef("pkg.mod4", ("run",), None, 1),),
        extra=(_function("Worker", kind="class"), _function("go", "Worker"), _function("step", "Worker")),
    )
    files["pkg/mod5.py"] = _module(extra=(_function("step"),))
    p = "/p"

    calls = {(c.caller, c.callee, c.confidence) for c in ProjectCode(p, files).edges().calls}

    assert calls == {
        (symbol_key(p, "pkg/app.py", "main"), symbol_key(p, "pkg/mod4.py", "run"), "import"),
        (symbol_key(p, "pkg/app.py", "run"), symbol_key(p, "pkg/app.py", "main"), "same_file"),
        (symbol_key(p, "pkg/app.py", "Worker.go"), symbol_key(p, "pkg/app.py", "Worker.step"), "self"),
    }


def test_a_name_defined_in_a_few_files_and_not_imported_is_ambiguous_and_in_many_unresolved() -> None:
    files = {f"a{i}.py": _module() for i in range(2)}
    files["b.py"] = ParsedFile(
        "python", (_function("caller"),), (CallRef("run", "x", 1, "caller"),), (), (), 0
    )
    few = {c.callee for c in ProjectCode("/p", files).edges().calls}
    files |= {f"c{i}.py": _module() for i in range(5)}

    assert few == {symbol_key("/p", "a0.py", "run"), symbol_key("/p", "a1.py", "run")}
    assert ProjectCode("/p", files).edges().calls == []


def test_one_import_written_in_many_files_names_the_same_module_and_a_relative_one_its_own() -> None:
    absolute = ImportRef("pkg.util", ("run",), None, 1)
    relative = ImportRef(".util", ("run",), None, 1)
    files = {
        "pkg/util.py": _module(imports=(absolute,)),  # the module itself: never its own import
        "pkg/a.py": _module(imports=(absolute, relative)),
        "other/b.py": _module(imports=(absolute, relative)),
        "other/util.py": _module(),
        "src/c.cpp": ParsedFile("cpp", (), (), (ImportRef("util.h", (), None, 1),), (), 0),
        "src/util.h": ParsedFile("cpp", (), (), (), (), 0),
        "lib/d.cpp": ParsedFile("cpp", (), (), (ImportRef("util.h", (), None, 1),), (), 0),
        "lib/util.h": ParsedFile("cpp", (), (), (), (), 0),
    }

    imports = set(ProjectCode("/p", files).edges().imports)

    assert {(a, b) for a, b in imports if a.endswith(".py")} == {
        ("pkg/a.py", "pkg/util.py"),
        ("other/b.py", "pkg/util.py"),  # `pkg.util` wherever it is written
        ("other/b.py", "other/util.py"),  # `.util`: the folder's own
    }
    assert ("src/c.cpp", "src/util.h") in imports and ("lib/d.cpp", "lib/util.h") in imports


def test_an_include_or_a_type_path_names_the_files_of_that_name_most_specific_first() -> None:
    def empty(language: str, *imports: str) -> ParsedFile:
        return ParsedFile(language, (), (), tuple(ImportRef(i, (), None, 1) for i in imports), (), 0)

    files = {
        "y/acme/Foo.java": empty("java"),
        "x/com/acme/Foo.java": empty("java"),
        "app/Main.java": empty("java", "com.acme.Foo"),
        "lib/b/util.h": empty("c"),
        "lib/a/util.h": empty("c"),
        "src/main.c": empty("c", "util.h", "b/util.h"),
    }

    imports = ProjectCode("/p", files).edges().imports

    assert [b for a, b in imports if a == "app/Main.java"] == ["x/com/acme/Foo.java"]  # not y/acme/
    assert [b for a, b in imports if a == "src/main.c"] == ["lib/a/util.h", "lib/b/util.h"]


def test_a_callee_reached_twice_keeps_the_surest_resolution() -> None:
    files = {
        "pkg/app.py": _module(
            CallRef("step", None, 5, "Worker.go"),  # a bare name: the one `step` of the project
            CallRef("step", "self", 6, "Worker.go"),  # then through self: the class's own
            extra=(_function("Worker", kind="class"), _function("go", "Worker"), _function("step", "Worker")),
        )
    }

    calls = [(c.callee, c.confidence) for c in ProjectCode("/p", files).edges().calls]

    assert calls == [(symbol_key("/p", "pkg/app.py", "Worker.step"), "self")]


def test_a_script_name_from_a_package_is_none_of_the_projects_and_one_from_a_project_alias_is() -> None:
    def script(*imports: tuple[str, str]) -> ParsedFile:
        refs = tuple(ImportRef(module, (name,), None, 1) for module, name in imports)
        calls = tuple(CallRef(name, None, 2, "main") for _, name in imports)
        return ParsedFile("typescript", (_function("main"),), calls, refs, (), 0)

    defined = (_function("lookup"), _function("format"), _function("parse"))
    files = {
        "src/lib/mime.ts": ParsedFile("typescript", defined, (), (), (), 0),
        "src/components/x.ts": ParsedFile("typescript", (), (), (), (), 0),
        "src/a.ts": script(("mime-types", "lookup"), ("@/lib/mime", "format"), ("components/x", "parse")),
    }

    callees = {c.callee.rsplit("::", 1)[1] for c in ProjectCode("/p", files).edges().calls}

    assert callees == {"format", "parse"}  # a tsconfig alias and a folder of the project: its own
