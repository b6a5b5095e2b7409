"""What a name of a JavaScript or TypeScript file stands for, for the call resolver (``codegraph``).

In every language, a name stands for code of its own language family only (``language_family``):
a JavaScript `on()` is none of the project's Python `on`s. Two more things a name alone does not
tell in JavaScript and TypeScript, both pure:

- which names the file's imports bind to packages outside the project (``import mime from
  "mime-types"``, ``var resolve = require("node:path").resolve``), with the language's and
  the runtime's own objects (``JSON``, ``Object``): a call of one, or on one, is theirs, never
  a project symbol that happens to share its name;
- which object ``this`` is in a function that no class holds: the object its method was
  assigned to (``res`` in ``res.send = function () {}``), or the prototype of a constructor
  function (``View.prototype`` in ``function View() {}``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence

from graphmem.core.code import Definition, ImportRef

SCRIPT_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
# The languages whose code calls each other's, by family: JavaScript, TypeScript and TSX import each
# other's files; C++ includes the ".h" headers the parser reads as C (``core.code``). Any other
# language is a family of its own: its calls reach none of another language's code.
LANGUAGE_FAMILIES = {**dict.fromkeys(SCRIPT_LANGUAGES, "javascript"), "cpp": "c"}
PROTOTYPE = "prototype"
# Specifiers that name project files although they are no relative path: an absolute path, a
# bundler's or tsconfig's alias (`~/x`, `@/x`) or a package's own subpath import (`#x`).
_PROJECT_PREFIXES = (".", "/", "~", "#", "@/")
_ROOT = re.compile(r"[\w$]*")  # the name a receiver starts with: `mime` of `mime.types[t]`
# The standard objects of ECMAScript, Node and browsers that code calls through: `JSON.stringify()`
# is none of the project's `stringify`s.
GLOBAL_OBJECTS = frozenset(
    {
        *("Array", "ArrayBuffer", "Atomics", "BigInt", "Boolean", "DataView", "Date", "Error", "Function"),
        *("Intl", "JSON", "Map", "Math", "Number", "Object", "Promise", "Proxy", "Reflect", "RegExp", "Set"),
        *("String", "Symbol", "TypeError", "RangeError", "WeakMap", "WeakRef", "WeakSet", "globalThis"),
        *("Buffer", "console", "process", "window", "document", "navigator", "URL", "URLSearchParams"),
    }
)


def outside_names(
    imports: Iterable[tuple[ImportRef, Sequence[str]]], folders: Collection[str], roots: Sequence[str]
) -> frozenset[str]:
    """The local names a file's imports (each with the project files it names) bind to packages,
    and the ``GLOBAL_OBJECTS`` it imports no project file as: imports that name no project file
    and whose module is no project path. ``folders`` are the
    project's folders, ``roots`` the source roots a module may be written from (``src/``): a
    module whose first part is one of those folders is the project's, written from a base URL."""
    names, own = set(GLOBAL_OBJECTS), set[str]()
    for ref, targets in imports:
        module = ref.module.strip().strip("\"'")
        bound = (ref.alias,) if ref.alias else ref.names  # `import {a as b}`: b only
        first = module.split("/", 1)[0]
        if targets or module.startswith(_PROJECT_PREFIXES) or any(root + first in folders for root in roots):
            own.update(bound)
        elif module:
            names.update(bound)
    return frozenset(names - own)


def root_name(receiver: str) -> str:
    """The name a receiver starts with (``path`` of ``path.posix``); empty when it starts otherwise."""
    found = _ROOT.match(receiver)
    return found.group() if found else ""


def this_object(caller: str | None, definition_of: Callable[[str], Definition | None]) -> str | None:
    """The qualified name of what ``this`` is in ``caller`` (a qualified name) when no class holds
    it: the object of its nearest method (``res`` of ``res.send``, ``View`` of
    ``View.prototype.lookup``), or else the top-level function it is in, a constructor (``View``
    of ``function View() { this.lookup() }``). ``definition_of`` reads the file's definitions."""
    while caller:
        definition = definition_of(caller)
        if definition is None:
            return None
        if definition.kind == "method" and definition.parent:
            return without_prototype(definition.parent)
        if definition.kind == "function" and definition.parent is None:
            return definition.qualified_name
        caller = definition.parent
    return None


def without_prototype(owner: str) -> str:
    """``View`` of ``View.prototype``: what a method assigned to a prototype belongs to."""
    stem, dot, last = owner.rpartition(".")
    return stem if dot and last == PROTOTYPE else owner


def member_names(owner: str, name: str) -> tuple[str, str]:
    """Where ``owner``'s method ``name`` may be defined: in its body or on it (``View.name``),
    or assigned to its prototype (``View.prototype.name``)."""
    return f"{owner}.{name}", f"{owner}.{PROTOTYPE}.{name}"


def language_family(language: str) -> str:
    """The family of ``language`` (a parser language): the languages whose code its calls may reach."""
    return LANGUAGE_FAMILIES.get(language, language)
