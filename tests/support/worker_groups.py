"""Which tests share a pytest-xdist worker: those that share a fixture wider than one test.

``make test`` runs the tests on several workers with ``--dist loadgroup``: a test goes to any
free worker unless it carries ``@pytest.mark.xdist_group(NAME)``, and the tests of one group all
go to one worker, one after another. A fixture of ``class``, ``module`` or ``package`` scope (a
daemon a module's tests only read, the hostile suite's daemon on each store) is built once per
worker that runs a test using it: spread over two workers it would be built twice, and a
package fixture with params (one per store) torn down and built again as the tests alternate.
So :func:`group_by_shared_fixtures` puts every test into the group of the widest such fixture it
uses (with the fixture's param, so that each param's tests may run beside the other's), unless it
names its group itself. ``session`` fixtures (the PostgreSQL server, the real model, the OpenCode
install) are each worker's own and make no group.

A test that shares something no fixture says (a file outside ``tmp_path``, a port, a global
setting) names its group: ``pytestmark = pytest.mark.xdist_group("NAME")`` (docs/testing.md).
"""

from __future__ import annotations

import pytest

# Widest first: a test using fixtures of several of these joins the widest one's group.
SHARED_SCOPES = ("package", "module", "class")


def group_by_shared_fixtures(items: list[pytest.Item]) -> None:
    """Mark each test that uses a shared fixture with the group of the widest one it uses."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None and (group := shared_group(item)) is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def shared_group(item: pytest.Item) -> str | None:
    """The group of the widest class, module or package fixtures ``item`` uses (with the params
    they have in it), or None."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    shared: dict[str, list[str]] = {scope: [] for scope in SHARED_SCOPES}
    baseids: dict[str, str] = {}
    for name in getattr(item, "fixturenames", ()):
        definitions = info.name2fixturedefs.get(name)
        scope = str(definitions[-1].scope) if definitions else ""
        if scope in shared:
            shared[scope].append(name)
            baseids[name] = definitions[-1].baseid or ""
    widest = next((scope for scope in SHARED_SCOPES if shared[scope]), None)
    if widest is None:
        return None
    nodeid = _own_id(item)
    path = nodeid.split("::")[0]
    # One instance per package (where the fixture is defined), module or class.
    owner = {
        "package": min(baseids[name] for name in shared[widest]) or path.rsplit("/", 1)[0],
        "module": path,
        "class": nodeid.rsplit("::", 1)[0],
    }[widest]
    callspec = getattr(item, "callspec", None)
    indices = callspec.indices if callspec is not None else {}
    params = [f"{name}={indices[name]}" for name in sorted(shared[widest]) if name in indices]
    # In parentheses, not brackets: pytest-xdist reads a test's group from after its last "@" only
    # when no "]" follows it (a param's id may hold an "@"), so "hostile[stage=0]" was no group at
    # all and each of the suite's cases went to any worker, which built both daemons.
    return f"{owner}({','.join(params)})" if params else owner


def _own_id(item: pytest.Item) -> str:
    """``item``'s id without the ``@group`` pytest-xdist appends to it on a worker."""
    groups = sorted(
        {
            str(m.args[0] if m.args else m.kwargs.get("name", "default"))
            for m in item.iter_markers("xdist_group")
        }
    )
    return item.nodeid.removesuffix("@" + "_".join(groups)) if groups else item.nodeid
