"""graphmem ui in a real browser: headless Chromium (Debian's) driven by Playwright against a
real daemon, with GitLab's facts from the fixture server (``support/fake_gitlab.py``).

With ``GRAPHMEM_UI_SCREENSHOTS=docs/images`` the tests also save the screenshots docs/ui.md
shows (``ui-*.png``), so the pictures are those of a passing run.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support.browser import launch
from support.daemons import http, sandbox_env, start_daemon, stop_serving
from support.fake_gitlab import TOKEN, FakeGitLab, shop_checkout
from support.local_server import POLL_S
from support.ui import NARROW, SCREENSHOTS, WIDE, World, go, screenshot

# The first test may install Chromium with apt (support/browser.py): room for that beside the run.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

HOSTILE = (
    '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script> '
    "[click me](javascript:window.__pwned=3) <b>bold</b> &amp; the refund queue"
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("ui")
    with FakeGitLab() as gitlab:
        shop = shop_checkout(root)
        daemon = start_daemon(
            root / "data",
            GRAPHMEM_INGEST__ENABLED="false",
            GRAPHMEM_GITLAB_TOKEN=TOKEN,
            GRAPHMEM_GITLAB__URL=gitlab.url,
            GRAPHMEM_GITLAB__TIMEOUT_SECONDS="5",
        )
        try:
            made = World(daemon, shop)
            made.remember("Refund fees are computed with Decimal in src/shop/refund.py", category="decision")
            made.call("enrich", refs=["!12"], project=shop)
            yield made
        finally:
            daemon.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launch() as context:
        yield context


@pytest.fixture
def page(browser: Any, world: World) -> Iterator[Any]:
    """The view, signed in as ``graphmem ui`` signs it in, on the search screen."""
    opened = browser.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.set_viewport_size(WIDE)
    opened.goto(world.daemon.url + world.sign_in_path())
    opened.wait_for_selector("body[data-ready='signed-in']")
    go(opened, "#/search")
    opened.wait_for_selector("#query", state="visible")
    yield opened
    opened.close()
    assert errors == [], errors


def test_signing_in_removes_the_code_from_the_address_and_opens_the_home_page(
    browser: Any, world: World
) -> None:
    opened = browser.new_page()
    opened.goto(world.daemon.url + world.sign_in_path())
    opened.wait_for_selector("#home .panel")
    assert "code=" not in opened.url and opened.url.endswith("#/home")
    opened.close()


def test_graphmem_ui_prints_a_url_that_signs_in_once_in_its_project(browser: Any, world: World) -> None:
    printed = world.cli("ui", "--print-url")
    assert printed.returncode == 0, printed.stderr
    url = printed.stdout.strip()
    assert url.startswith(f"{world.daemon.url}/ui/#code=") and url.endswith(f"&project={world.shop}")
    opened = browser.new_page()
    opened.goto(url)
    opened.wait_for_selector("body[data-ready='signed-in']")
    assert opened.locator("#project").input_value() == world.shop
    opened.close()


def test_graphmem_ui_starts_the_daemon_when_none_runs(tmp_path: Path) -> None:
    env = sandbox_env(tmp_path / "data", GRAPHMEM_INGEST__ENABLED="false")
    run = [sys.executable, "-m", "graphmem"]
    try:
        printed = subprocess.run(
            [*run, "ui", "--print-url"], env=env, capture_output=True, text=True, timeout=300
        )
        assert printed.returncode == 0, printed.stderr
        url = printed.stdout.strip()
        assert "/ui/#code=" in url
        status, _, raw = http("GET", url.split("#")[0], token=False)
        assert status == 200 and b'src="app.js"' in raw
    finally:
        stop_serving(tmp_path / "data")


def test_a_used_sign_in_link_does_not_sign_in_again(browser: Any, world: World) -> None:
    path = world.sign_in_path()
    first = browser.new_page()
    first.goto(world.daemon.url + path)
    first.wait_for_selector("body[data-ready='signed-in']")
    second = browser.new_page()
    second.goto(world.daemon.url + path)
    second.wait_for_selector("body[data-ready='signed-out']")
    assert second.locator("#signed-out").is_visible()
    assert "used already" in second.locator("#toast").inner_text()
    first.close()
    second.close()


def test_search_returns_a_hit_and_draws_why(page: Any, world: World) -> None:
    page.fill("#query", "what did !12 do")
    page.press("#query", "Enter")
    card = page.locator("#hits li").filter(has_text="computed with Decimal")
    card.wait_for()
    channels = card.locator(".channels").inner_text()
    assert "entity #" in channels
    path = card.locator(".path").inner_text()
    assert "!12" in path and "changes" in path and "src/shop/refund.py" in path
    words = card.locator(".why").inner_text()
    assert "`src/shop/refund.py`, which was changed by !12" in words and "mem_" not in words
    assert card.locator(".barline").count() >= 2  # the score and each channel drawn as bars
    screenshot(page, "search")


def drawn(page: Any, graph: str = "graph") -> list[str]:
    """The nodes a graph draws, as "kind: label" (read from cytoscape.js through the page)."""
    found: list[str] = page.evaluate(
        "id => document.getElementById(id).graph.cy.nodes()"
        ".map(n => `${n.data('kind')}: ${n.data('label')}`)",
        graph,
    )
    return found


def open_graph(page: Any, fragment: str) -> None:
    go(page, fragment)
    page.wait_for_function("() => Number(document.getElementById('graph').dataset.nodes) > 1")


def test_the_graph_of_an_mr_shows_its_files(page: Any, world: World) -> None:
    open_graph(page, "#/graph/!12")
    nodes = drawn(page)
    assert "MergeRequest: !12" in nodes
    assert any(node.endswith("src/shop/refund.py") for node in nodes), nodes
    relations = page.evaluate(
        "() => document.getElementById('graph').graph.cy.edges().map(e => e.data('relation'))"
    )
    assert "changes" in relations and "closes" in relations
    screenshot(page, "graph-mr")


def test_a_node_expands_with_the_keyboard(page: Any, world: World) -> None:
    open_graph(page, "#/graph/!12")
    before = len(drawn(page))
    page.focus("#graph")
    assert "!12" in page.locator("#graph-side").inner_text()  # the centre is selected first
    for arrow in ("ArrowRight", "ArrowLeft", "ArrowUp", "ArrowDown"):
        page.keyboard.press(arrow)  # to the nearest node that way, if there is one
        if "!12" not in page.locator("#graph-side").inner_text():
            break
    assert "!12" not in page.locator("#graph-side").inner_text()
    page.evaluate(
        "() => { const g = document.getElementById('graph').graph;"
        " g.select(g.cy.nodes().filter(n => n.data('label') === 'src/shop/refund.py')[0].id()); }"
    )
    page.keyboard.press("Enter")  # the file's own neighbours: the memory about it
    page.wait_for_function(f"() => Number(document.getElementById('graph').dataset.nodes) > {before}")
    assert any("computed with Decimal" in node for node in drawn(page))
    page.keyboard.press("-")  # and back
    page.wait_for_function(f"() => Number(document.getElementById('graph').dataset.nodes) === {before}")


def test_keyboard_alone_searches_and_opens_a_memory(page: Any, world: World) -> None:
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "query"
    page.keyboard.type("Decimal refund fees")
    page.keyboard.press("Enter")
    page.wait_for_selector("#hits li")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")  # the checkbox, Search, then the first hit
    assert page.evaluate("document.activeElement.classList.contains('open')")
    page.keyboard.press("Enter")
    page.wait_for_selector("#memory-text")
    assert "computed with Decimal" in page.locator("#memory-text").inner_text()


def test_an_edit_in_the_page_is_what_the_cli_shows(page: Any, world: World) -> None:
    memory_id = world.remember("Deploys go out on Tuesdays", category="procedure")
    go(page, f"#/memory/{memory_id}")
    page.wait_for_selector("#memory-text")
    page.get_by_role("button", name="Edit", exact=True).click()
    page.fill(".editor textarea", "Deploys go out on Thursdays after the freeze")
    page.get_by_role("button", name="Save").click()
    page.wait_for_function("() => document.getElementById('memory-text')?.textContent.includes('Thursdays')")
    shown = world.cli("show", memory_id, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["text"] == "Deploys go out on Thursdays after the freeze"
    history = world.cli("history", memory_id)
    assert "Tuesdays" in history.stdout  # the old text went to its history, as from the CLI
    assert "was: Deploys go out on Tuesdays" in page.locator("ol.history").inner_text()
    page.locator("ol.history").get_by_role("button", name="Undo").click()  # and back, as graphmem undo
    page.wait_for_function("() => document.getElementById('memory-text')?.textContent.includes('Tuesdays')")
    assert json.loads(world.cli("show", memory_id, "--json").stdout)["text"] == "Deploys go out on Tuesdays"
    screenshot(page, "memory")


def test_archive_restore_and_supersede_are_the_clis_verbs(page: Any, world: World) -> None:
    memory_id = world.remember("Releases are cut from the main branch", category="decision")
    go(page, f"#/memory/{memory_id}")
    page.wait_for_selector("#memory-text")
    page.get_by_role("button", name="Archive").click()
    page.get_by_role("button", name="Restore").wait_for()
    assert json.loads(world.cli("show", memory_id, "--json").stdout)["status"] == "archived"
    page.get_by_role("button", name="Restore").click()
    page.get_by_role("button", name="Archive").wait_for()
    assert json.loads(world.cli("show", memory_id, "--json").stdout)["status"] == "active"
    page.get_by_role("button", name="Supersede").click()
    page.fill(".editor textarea", "Releases are cut from release branches since the 2.0 freeze")
    page.get_by_role("button", name="Write and supersede").click()
    page.wait_for_function(
        "() => document.getElementById('memory-text')?.textContent.includes('release branches')"
    )
    assert json.loads(world.cli("show", memory_id, "--json").stdout)["status"] == "superseded"
    assert "supersedes" in page.locator("#memory").inner_text()


def test_a_link_made_in_the_page_is_the_clis(page: Any, world: World) -> None:
    source = world.remember("Payments retry three times with backoff", category="decision")
    target = world.remember("The payment gateway rate-limits at 10 requests per second", category="fact")
    go(page, f"#/memory/{source}")
    page.wait_for_selector("#memory-text")
    page.get_by_role("button", name="Link", exact=True).click()
    page.select_option(".editor select", "extends")
    page.fill(".editor input", target)
    page.locator(".editor").get_by_role("button", name="Link").click()
    page.wait_for_function(f"() => document.getElementById('memory')?.textContent.includes('{target}')")
    links = json.loads(world.cli("show", source, "--json").stdout)["links"]
    assert any(link["target"] == target and link["kind"] == "extends" for link in links), links


def test_a_delete_asks_first(page: Any, world: World) -> None:
    memory_id = world.remember("The staging database is wiped on Fridays", category="fact")
    go(page, f"#/memory/{memory_id}")
    page.wait_for_selector("#memory-text")
    page.get_by_role("button", name="Delete").click()
    dialog = page.locator("dialog#confirm")
    assert dialog.is_visible() and "wiped on Fridays" in dialog.inner_text()
    page.keyboard.press("Escape")
    assert not dialog.is_visible()
    assert world.cli("show", memory_id).returncode == 0  # cancelled: still there
    page.get_by_role("button", name="Delete").click()
    page.locator("#confirm-yes").click()
    page.wait_for_function("() => location.hash === '#/browse'")
    gone = world.cli("show", memory_id)
    assert gone.returncode != 0 and "No memory" in (gone.stderr + gone.stdout)


def test_a_memory_holding_html_is_shown_as_text_and_never_run(page: Any, world: World) -> None:
    memory_id = world.remember(HOSTILE, category="fact")
    go(page, f"#/memory/{memory_id}")
    page.wait_for_selector("#memory-text")
    assert page.locator("#memory-text").text_content() == HOSTILE
    go(page, "#/search?q=refund%20queue%20bold")
    card = page.locator(f"#hits li[data-id='{memory_id}']")
    card.wait_for()
    assert card.locator("img, script, b, a[href^='javascript']").count() == 0
    assert page.locator("main img, main script").count() == 0
    assert page.evaluate("window.__pwned") is None


def test_a_page_of_another_origin_can_neither_read_nor_write(browser: Any, world: World, page: Any) -> None:
    session = page.evaluate("sessionStorage.getItem('graphmem.session')")
    assert session
    before = world.call("stats")["total"]
    with foreign_site(world.daemon.url, session) as url:
        other = browser.new_page()
        other.goto(url)
        other.wait_for_selector("body[data-done]", state="attached")
        results = json.loads(other.locator("body").get_attribute("data-done"))
        other.close()
    # Each attempt failed in the browser (CORS) or came back opaque; none was answered.
    assert results == {
        "json": "blocked",
        "json-with-session": "blocked",
        "simple": "opaque",
        "sign-in": "blocked",
        "status": "blocked",
    }
    assert world.call("stats")["total"] == before
    assert world.call("recall", query="planted by another site")["hits"] == []


FOREIGN_PAGE = """<!doctype html><html><body><script>
const daemon = new URLSearchParams(location.search).get("daemon");
const session = new URLSearchParams(location.search).get("session");
const plant = JSON.stringify({method: "remember", arguments: {text: "planted by another site"}});
const json = {"Content-Type": "application/json"};
async function attempt(url, init) {
  try {
    const answer = await fetch(daemon + url, init);
    return answer.type === "opaque" ? "opaque" : "answered " + answer.status + " " + await answer.text();
  } catch (error) {
    return "blocked";
  }
}
(async () => {
  const results = {
    "json": await attempt("/rpc", {method: "POST", headers: json, body: plant}),
    "json-with-session": await attempt("/rpc", {method: "POST", body: plant,
      headers: {...json, Authorization: "Bearer " + session}}),
    "simple": await attempt("/rpc", {method: "POST", mode: "no-cors", body: plant,
      headers: {"Content-Type": "text/plain"}}),
    "sign-in": await attempt("/ui/session", {method: "POST", headers: json, body: '{"code": "guess"}'}),
    "status": await attempt("/ui/status", {method: "POST", body: "{}",
      headers: {...json, Authorization: "Bearer " + session}}),
  };
  document.body.dataset.done = JSON.stringify(results);
})();
</script></body></html>"""


class _Foreign(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = FOREIGN_PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class foreign_site:
    """A second local web server (another origin: another port) serving a page that tries."""

    def __init__(self, daemon_url: str, session: str) -> None:
        from urllib.parse import urlencode

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Foreign)
        self.query = urlencode({"daemon": daemon_url, "session": session})

    def __enter__(self) -> str:
        # Polled as every stand-in's: serve_forever's default (0.5 s) was waited out at the exit.
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True
        ).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/?{self.query}"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_browse_filters_and_counts(page: Any, world: World) -> None:
    go(page, "#/browse")
    page.wait_for_selector("#memories li")
    assert "decision" in page.locator("#counts").inner_text()
    page.select_option("#f-category", "decision")
    page.click("#browse-go")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#memories li .tag:first-child')]"
        ".every(t => t.textContent === 'decision')"
    )
    assert page.locator("#memories li").count() >= 1
    screenshot(page, "browse")


def test_context_shows_the_bundle_and_its_tokens(page: Any, world: World) -> None:
    go(page, "#/context?target=src%2Fshop%2Frefund.py")
    page.wait_for_function("() => document.getElementById('context-markdown').textContent.length > 0")
    assert "computed with Decimal" in page.locator("#context-markdown").inner_text()
    assert "tokens" in page.locator("#context-meta").inner_text()
    assert len(drawn(page, "context-graph")) >= 2
    screenshot(page, "context")


def test_status_shows_the_figures(page: Any, world: World) -> None:
    go(page, "#/status")
    page.wait_for_selector("#status .figure")
    text = page.locator("#status").inner_text()
    assert "memories" in text and "waiting for a vector" in text
    assert re.search(r"GitLab enrichment, \d+ waiting", text)  # GitLab's queue, as /stats counts it


def test_a_narrow_window_has_no_sideways_scroll(page: Any, world: World) -> None:
    page.set_viewport_size(NARROW)
    for fragment, ready in (("#/search?q=refund", "#hits li"), ("#/graph/!12", "#graph canvas"),
                            ("#/browse", "#memories li"), ("#/home", "#home .panel")):  # fmt: skip
        go(page, fragment)
        page.wait_for_selector(ready)
        assert page.evaluate("document.documentElement.scrollWidth") <= NARROW["width"], fragment
    go(page, "#/search?q=refund")
    page.wait_for_selector("#hits li")
    screenshot(page, "narrow")


def test_the_theme_toggle_switches_dark_and_light(page: Any, world: World) -> None:
    background = "getComputedStyle(document.body).backgroundColor"
    first = page.evaluate(background)
    page.click("#theme")
    second = page.evaluate(background)
    assert second != first
    page.click("#theme")
    assert page.evaluate(background) == first
    page.emulate_media(color_scheme="dark")
    page.evaluate("localStorage.removeItem('graphmem.theme')")
    page.reload()
    page.wait_for_selector("body[data-ready='signed-in']")
    assert page.evaluate(background) == "rgb(13, 17, 23)"
    if SCREENSHOTS:
        open_graph(page, "#/graph/!12")
        screenshot(page, "dark")


def test_the_graph_draws_a_kind_in_the_themes_colour(page: Any, world: World) -> None:
    """style.css writes a colour's light and dark values as one ``light-dark()``: the drawing
    (cytoscape, given colours by graph.js) gets the one of the theme shown."""
    mr = "() => document.getElementById('graph').graph.cy.nodes('[kind = \"MergeRequest\"]')[0]"
    colour = f"() => ({mr})().style('background-color').replaceAll(' ', '')"
    page.evaluate("localStorage.setItem('graphmem.theme', 'light')")
    try:
        page.reload()
        page.wait_for_selector("body[data-ready='signed-in']")
        open_graph(page, "#/graph/!12")
        assert page.evaluate(colour) == "rgb(130,80,223)"  # --node-mr's light value, #8250df
        page.click("#theme")
        assert page.evaluate(colour) == "rgb(171,125,248)"  # and its dark one, #ab7df8
    finally:
        page.evaluate("localStorage.removeItem('graphmem.theme')")  # the browser is the module's


def test_chromium_is_the_systems(world: World) -> None:
    """The browser these tests drive is Debian's, not one Playwright downloaded."""
    from support.browser import CHROMIUM

    assert CHROMIUM.is_file() and shutil.which(str(CHROMIUM)) is not None
