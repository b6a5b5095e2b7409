"""graphmem ui on a store bootstrapped from a real repository: click (``../shared/data/repos/
click.bundle``), its code graph and its last 1,000 commits as memories, about the size of the
store the issue tried (requests, 1,000 memories). One daemon, one store and one Chromium for
every test here: the home page, the legend and the graph's expand and collapse, at 1280×860 and
390 px wide, light and dark. No test here is about what the model finds: the daemon stores the
hash embedder's vectors (``support/hash_vectors.py``), which spares the model's embedding of the
1,000 commits (a quarter of the module's CPU, about 5 s).

With ``GRAPHMEM_UI_SCREENSHOTS=docs/images`` the tests save docs/ui.md's home and graph pictures.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from support.browser import launch
from support.daemons import HASH_VECTORS, start_daemon, token_for
from support.ui import SCREENSHOTS, WIDE, World, go, screenshot

CLICK_BUNDLE = Path(__file__).resolve().parents[3] / "shared" / "data" / "repos" / "click.bundle"
HISTORY = 1000  # commits learned: about 1,000 memories
NARROW = {"width": 390, "height": 844}
STALE = "`format_filename` must keep returning str for display, never bytes"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(2400),
    pytest.mark.skipif(not CLICK_BUNDLE.exists(), reason="needs ../shared/data/repos/click.bundle"),
]


class Click(World):
    """The daemon on a bootstrapped click checkout, with what needs a person in it."""

    proposal = ""
    stale = ""
    blocker = ""

    def agent_remembers(self, text: str, **arguments: Any) -> str:
        """``remember`` as an agent calls it (MCP): its directive is a proposal."""

        async def go() -> str:
            async with Client(self.daemon.mcp_url, auth=token_for(self.daemon.mcp_url)) as client:
                found = await client.call_tool("remember", {"text": text, "project": self.shop, **arguments})
                assert found.structured_content is not None
                memory_id: str = found.structured_content["memory"]["id"]
                return memory_id

        with ThreadPoolExecutor(1) as thread:  # Playwright's loop may run in this one
            return thread.submit(asyncio.run, go()).result()


@pytest.fixture(scope="module")
def click(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Click]:
    root = tmp_path_factory.mktemp("click-ui")
    checkout = root / "click"
    subprocess.run(["git", "clone", "-q", str(CLICK_BUNDLE), str(checkout)], check=True)
    daemon = start_daemon(root / "data", program=HASH_VECTORS, GRAPHMEM_INGEST__ENABLED="false")
    try:
        world = Click(daemon, str(checkout.resolve()))
        booted = world.cli("bootstrap", str(checkout), "--history", str(HISTORY))
        assert booted.returncode == 0, booted.stderr
        world.proposal = world.agent_remembers(
            "Always run the test suite with `pytest -p no:cacheprovider`",
            category="directive",
            session="ses_7",
        )
        world.agent_remembers("The docs build needs sphinx-tabs installed", category="fact", session="ses_7")
        world.blocker = world.remember(
            "Releases are blocked until the 8.2 deprecations are documented", category="blocker"
        )
        world.stale = world.remember(STALE, category="decision")
        utils = checkout / "src" / "click" / "utils.py"
        code = utils.read_text("utf-8")
        at = code.index(") -> str:\n", code.index("def format_filename("))
        utils.write_text(code[:at] + ") -> str:  # its body changed\n" + code[at + 10 :], "utf-8")
        rescanned = world.cli("bootstrap", str(checkout), "--history", "0")
        assert rescanned.returncode == 0, rescanned.stderr
        yield world
    finally:
        daemon.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launch() as context:
        yield context


@pytest.fixture
def page(browser: Any, click: Click) -> Iterator[Any]:
    opened = browser.new_page()
    # A thousand-memory store's neighbourhood on a loaded two-core machine: waits get room.
    opened.set_default_timeout(90_000)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    opened.set_viewport_size(WIDE)
    opened.goto(click.daemon.url + click.sign_in_path())
    opened.wait_for_selector("#home .panel")
    yield opened
    opened.close()
    assert errors == [], errors  # no script error, no Content-Security-Policy refusal


def test_the_home_page_says_what_needs_you(page: Any, click: Click) -> None:
    proposed = page.locator(f"#home-proposed li[data-id='{click.proposal}']")
    assert "proposed by an agent" in proposed.inner_text()
    assert page.locator(f"#home-stale li[data-id='{click.stale}']").inner_text().count("format_filename") >= 2
    assert page.locator(f"#home-blockers li[data-id='{click.blocker}']").is_visible()
    assert (
        "pytest -p no:cacheprovider" not in page.locator("#home-learned").inner_text()
    )  # a proposal, not learned
    assert "sphinx-tabs" in page.locator("#home-learned").inner_text()
    counts = re.search(r"(\d+) memories here, (\d+) in the store", page.locator("#home-meta").inner_text())
    assert counts is not None and int(counts[2]) >= int(counts[1]) >= HISTORY
    screenshot(page, "home")
    page.locator(f"#home-stale li[data-id='{click.stale}'] a").click()  # each item opens the memory
    page.wait_for_selector("#memory-text")
    assert "format_filename" in page.locator("#memory-text").inner_text()


def test_a_proposal_is_confirmed_from_the_home_page(page: Any, click: Click) -> None:
    page.locator(f"#home-proposed li[data-id='{click.proposal}']").get_by_role(
        "button", name="Confirm as yours"
    ).click()
    page.wait_for_selector(f"#home-proposed li[data-id='{click.proposal}']", state="detached")
    shown = json.loads(click.cli("show", click.proposal, "--json").stdout)
    assert shown["status"] == "active" and shown["trust"] == "confirmed"


def graph_of(page: Any) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(
        """() => { const g = document.getElementById('graph').graph;
        return { nodes: g.cy.nodes().map(n => ({ key: n.id(), kind: n.data('kind'), label: n.data('label'),
                   at: n.renderedPosition(), shape: n.style('shape'), colour: n.style('background-color') })),
                 zoom: g.cy.zoom(), ms: g.lastDrawMs }; }"""
    )
    return found


def open_file_graph(page: Any) -> None:
    go(page, "#/graph/src%2Fclick%2Fcore.py")
    page.wait_for_function("() => Number(document.getElementById('graph').dataset.nodes) > 1")


def test_the_graph_of_a_hub_is_readable_with_a_legend(page: Any, click: Click) -> None:
    open_file_graph(page)
    drawn = graph_of(page)
    kinds = {n["kind"] for n in drawn["nodes"]}
    assert {"File", "Symbol", "Memory", "more"} <= kinds
    assert len(drawn["nodes"]) <= 40  # a few per kind of edge: the rest behind "+N more"
    assert drawn["zoom"] >= 0.8  # labels of 13 px at this zoom read at 10 px or more
    by_kind = {n["kind"]: (n["shape"], n["colour"]) for n in drawn["nodes"]}
    assert len(set(by_kind.values())) == len(by_kind)  # each kind its own shape and colour
    legend = page.locator("#graph-legend").inner_text()
    assert "file" in legend and "symbol" in legend and "memory" in legend
    screenshot(page, "graph")


def drawn_count(page: Any) -> int:
    count: int = page.evaluate("() => document.getElementById('graph').graph.cy.nodes().length")
    return count


def test_a_click_expands_a_node_and_collapse_takes_it_back(page: Any, click: Click) -> None:
    open_file_graph(page)
    before = graph_of(page)
    commit = next(n for n in before["nodes"] if n["kind"] == "Memory")  # a commit: its other files
    # A tap on the node as cytoscape delivers a click (a click at its drawn point can land on a
    # neighbour's label laid over it). The function returns nothing: emit() returns the node, a
    # cytoscape collection that Playwright took 35 to 60 s to serialise back (all of the graph).
    page.evaluate(
        "key => { document.getElementById('graph').graph.cy.getElementById(key).emit('tap'); }", commit["key"]
    )
    page.wait_for_function(
        "key => document.getElementById('graph').graph.selected === key", arg=commit["key"]
    )
    page.wait_for_function(GROWN, arg=len(before["nodes"]))
    screenshot(page, "graph-expanded")
    page.get_by_role("button", name="Collapse").click()
    assert drawn_count(page) == len(before["nodes"])
    more = next(n for n in before["nodes"] if n["kind"] == "more")
    page.evaluate("key => document.getElementById('graph').graph.select(key)", more["key"])
    page.keyboard.press("Enter")  # "+N more" draws more of the hub's neighbours
    page.wait_for_function(GROWN, arg=len(before["nodes"]))


GROWN = "n => document.getElementById('graph').graph.cy.nodes().length > n"


def test_drawing_two_hundred_nodes(page: Any, click: Click) -> None:
    """Reports the time cytoscape.js takes to lay out and draw 200 nodes (never asserted)."""
    timing = page.evaluate(
        """() => { const g = document.getElementById('graph').graph;
        const nodes = Array.from({ length: 199 }, (_, i) => ({ key: `File:n${i}`,
          kind: ['File', 'Symbol', 'Memory'][i % 3], label: `node ${i} with a label of some length`,
          title: '', status: '' }));
        const edges = nodes.map((n, i) => ({ source: i < 20 ? 'File:c' : `File:n${i % 20}`,
          relation: 'CONTAINS', target: n.key }));
        g.maxNodes = 250;  // the view stops at MAX_NODES; the measure is the library's
        const runs = [];
        for (let i = 0; i < 3; i++) {
          const started = performance.now();
          const center = { key: 'File:c', kind: 'File', label: 'centre', title: '', status: '' };
          g.show({ center, nodes, edges, more: 0 });
          runs.push(performance.now() - started);
        }
        return { size: g.size, runs }; }"""
    )
    go(page, "#/home")
    runs = sorted(timing["runs"])
    print(
        f"\ncytoscape.js: {timing['size']} nodes laid out and drawn in {runs[1]:.0f} ms (median of 3: {runs})"
    )
    assert timing["size"] == 200


def test_every_view_at_390_px_and_dark(page: Any, click: Click) -> None:
    page.set_viewport_size(NARROW)
    for fragment, ready in (("#/home", "#home .panel"), ("#/graph/src%2Fclick%2Fcore.py", "#graph canvas"),
                            ("#/status", "#status .figure")):  # fmt: skip
        go(page, fragment)
        page.wait_for_selector(ready)
        assert page.evaluate("document.documentElement.scrollWidth") <= NARROW["width"], fragment
    page.set_viewport_size(WIDE)
    page.emulate_media(color_scheme="dark")
    page.reload()
    page.wait_for_selector("body[data-ready='signed-in']")
    go(page, "#/home")
    page.wait_for_selector("#home .panel")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(13, 17, 23)"
    if SCREENSHOTS:
        screenshot(page, "home-dark")
        open_file_graph(page)
        screenshot(page, "graph-dark")


def test_status_shows_the_project_beside_the_store(page: Any, click: Click) -> None:
    go(page, "#/status")
    page.wait_for_selector("#status .figure")
    first = page.locator("#status .figure").first.inner_text()
    assert re.search(r"\d+ of \d+", first) and "in this project" in first
    screenshot(page, "status")
