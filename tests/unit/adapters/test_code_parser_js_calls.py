"""Who calls what in a small CommonJS project written as express writes itself, parsed with the
real parser and resolved by ``ProjectCode``: a function under two names is found under both, a
``this.f()`` stays on its own object, and a package's names never land on the project's symbols."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.adapters.code_parser import TreeSitterParser
from graphmem.core.code import ParsedFile
from graphmem.core.codegraph import ProjectCode, symbol_key

PROJECT = "/p"
FILES = {
    "lib/response.js": """
var res = Object.create(null);
res.set = res.header = function header(field, val) {
  this.setHeader(field, val);
};
res.send = function send(body) {
  this.set('Content-Length', body.length);
  this.end(body);
  return JSON.stringify(body);
};
module.exports = res;
""",
    "lib/request.js": """
var req = Object.create(null);
req.get = req.header = function header(name) {
  return this.headers[name];
};
req.range = function range(size) {
  return this.get('Range');
};
""",
    "lib/application.js": """
var app = exports = module.exports = {};
app.set = function set(setting, val) {
  this.settings[setting] = val;
};
app.end = function end() {};
app.create = function create() {};
""",
    "lib/view.js": """
function View(name) {
  this.path = this.lookup(name);
}
View.prototype.lookup = function lookup(name) {
  return this.resolve('.', name);
};
View.prototype.resolve = function resolve(dir, file) {
  return dir + file;
};
function stringify(value) {
  return String(value);
}
""",
    "lib/utils.js": """
var mime = require('mime-types');
var resolve = require('node:path').resolve;
var View = require('./view').View;
exports.normalizeType = function normalizeType(type) {
  return mime.lookup(type);
};
exports.views = function views() {
  View('index');
  return resolve('views');
};
""",
    "lib/paths.js": """
const { lookup } = require('mime-types');
const stringify = require('node:querystring').stringify;
function extension(type) {
  return lookup(type) + stringify({});
}
""",
}


@pytest.fixture(scope="module")
def parser() -> TreeSitterParser:
    return TreeSitterParser()


def parse_project(parser: TreeSitterParser, root: Path, files: dict[str, str]) -> dict[str, ParsedFile]:
    parsed = {}
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
        parsed[path] = parser.parse((root / path).read_bytes(), "javascript")
    return parsed


def calls_of(parsed: dict[str, ParsedFile]) -> set[tuple[str, str, str]]:
    """Every call edge as (caller, callee, confidence), each symbol as ``path::qualified name``."""
    start = len(symbol_key(PROJECT, "", "")) - 2
    return {
        (c.caller[start:], c.callee[start:], c.confidence) for c in ProjectCode(PROJECT, parsed).edges().calls
    }


@pytest.fixture
def calls(parser: TreeSitterParser, tmp_path: Path) -> set[tuple[str, str, str]]:
    return calls_of(parse_project(parser, tmp_path, FILES))


def test_a_function_assigned_to_two_names_is_a_symbol_under_each(
    parser: TreeSitterParser, tmp_path: Path
) -> None:
    parsed = parse_project(parser, tmp_path, FILES)

    response = {d.qualified_name: d for d in parsed["lib/response.js"].definitions}
    request = {d.qualified_name for d in parsed["lib/request.js"].definitions}

    assert {"res.set", "res.header"} <= set(response) and {"req.get", "req.header"} <= request
    assert (response["res.set"].start_line, response["res.set"].end_line) == (3, 5)
    assert response["res.set"].parent == response["res.header"].parent == "res"


def test_what_a_function_under_two_names_calls_each_of_them_calls(
    parser: TreeSitterParser, tmp_path: Path
) -> None:
    callers = {
        c.caller
        for c in parse_project(parser, tmp_path, FILES)["lib/response.js"].calls
        if c.name == "setHeader"
    }

    assert callers == {"res.set", "res.header"}


def test_this_in_a_method_of_an_object_calls_that_objects_method(calls: set[tuple[str, str, str]]) -> None:
    assert ("lib/response.js::res.send", "lib/response.js::res.set", "self") in calls
    assert ("lib/request.js::req.range", "lib/request.js::req.get", "self") in calls
    assert not {c for c in calls if c[1] == "lib/application.js::app.set"}  # another object's, elsewhere


def test_this_in_a_constructor_or_on_a_prototype_calls_the_prototypes_method(
    calls: set[tuple[str, str, str]],
) -> None:
    assert ("lib/view.js::View", "lib/view.js::View.prototype.lookup", "self") in calls
    assert ("lib/view.js::View.prototype.lookup", "lib/view.js::View.prototype.resolve", "self") in calls


def test_a_this_call_its_object_lacks_resolves_to_no_other_objects_method(
    calls: set[tuple[str, str, str]],
) -> None:
    # res has no `end` (http.ServerResponse's): app.end is the one project symbol of that name
    assert not {c for c in calls if c[0] == "lib/response.js::res.send" and c[1].endswith(".end")}


def test_a_name_bound_to_a_package_or_on_one_resolves_to_no_project_symbol(
    calls: set[tuple[str, str, str]],
) -> None:
    from_utils = {c for c in calls if c[0].startswith(("lib/utils.js", "lib/paths.js"))}

    assert from_utils == {("lib/utils.js::exports.views", "lib/view.js::View", "import")}  # `./view`'s View


def test_a_call_on_a_standard_object_is_not_the_projects(calls: set[tuple[str, str, str]]) -> None:
    # `JSON.stringify()`, `Object.create()`: view.js's stringify and app.create are the project's only ones
    assert not {c for c in calls if c[1] in ("lib/view.js::stringify", "lib/application.js::app.create")}


def test_a_bare_call_is_never_an_objects_method(parser: TreeSitterParser, tmp_path: Path) -> None:
    files = {
        "view.js": "View.prototype.resolve = function resolve(dir) { return dir; };\n",
        "app.js": "function views() { return resolve('views'); }\nfunction render() { return views(); }\n",
    }

    assert calls_of(parse_project(parser, tmp_path, files)) == {
        ("app.js::render", "app.js::views", "same_file")
    }
