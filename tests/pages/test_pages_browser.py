"""The pages in headless Chromium (Debian's, driven by Playwright: no browser is downloaded):
every page loads with no console error and no request beyond its origin; a search finds the
seeded phrase and opens its document at the chunk; an answer streams and its citation opens the
right document; Stop ends the model's generation; a graph vertex click re-centres; hostile
documents render as text; keyboard use and a 400 px wide window work."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.pages.site import SEEDED, Site, slow_model_pages

QUESTION = "How do I handle an exception with try and except?"


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("chromium is not installed (scripts/test installs it with apt as root)")
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Watch:
    """What a page did that it must not: console errors, uncaught errors, dialogs (an alert
    from injected script), requests to another origin."""

    origin: str
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)

    def attach(self, page: Any) -> Any:
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("dialog", self._dialog)
        page.on("request", self._request)
        return page

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _request(self, request: Any) -> None:
        if not request.url.startswith(self.origin) and not request.url.startswith("data:"):
            self.foreign.append(request.url)

    def clean(self) -> None:
        assert self.errors == [] and self.dialogs == [] and self.foreign == [], self


def _page(browser: Any, site: Site, **context: Any) -> tuple[Any, Watch]:
    watch = Watch(f"http://127.0.0.1:{site.port}/")
    page = browser.new_context(**context).new_page()
    page.set_default_timeout(60_000)
    return watch.attach(page), watch


def test_every_page_loads_without_console_errors(browser: Any, site: Site) -> None:
    page, watch = _page(browser, site)
    paths = [
        "/search", f"/search?q={SEEDED}", "/ask", f"/document/{site.hostile_id}",
        f"/document/{site.mail_id}", f"/document/{site.errors_id}", "/facts", "/facts?text=torch",
        "/graph", "/graph?find=quartz", f"/graph?v=Document:{site.hostile_id}&hops=2", "/sources",
    ]  # fmt: skip
    for path in paths:
        response = page.goto(site.url + path)
        assert response is not None and response.status == 200, path
        page.wait_for_load_state("load")
    watch.clean()


def test_hostile_documents_render_as_text(browser: Any, site: Site) -> None:
    page, watch = _page(browser, site)
    for path in (f"/document/{site.hostile_id}", f"/document/{site.mail_id}",
                 "/search?q=quartz&mode=keyword", "/facts?text=torch"):  # fmt: skip
        page.goto(site.url + path)
        page.wait_for_load_state("load")
        # The markup the index holds is text on the page, not elements in it.
        assert page.locator("main img, main script, main b").count() == 0, path
    page.goto(site.url + f"/document/{site.hostile_id}")
    assert "<script>alert('note')</script>" in page.locator("pre.text").inner_text()
    assert '"><img src=x onerror=alert(1)>.md' in page.locator("dl.meta").inner_text()
    page.goto(site.url + "/facts?text=torch")
    assert "<b onmouseover=alert(2)>torch</b>" in page.locator("ul.factlist").inner_text()
    watch.clean()


def test_a_search_by_keyboard_finds_the_seeded_phrase_and_opens_its_chunk(
    browser: Any, site: Site
) -> None:
    page, watch = _page(browser, site)
    page.goto(site.url + "/search")
    # The box has the focus: typing and Enter search.
    assert page.evaluate("document.activeElement.name") == "q"
    page.keyboard.type(SEEDED)
    page.keyboard.press("Enter")
    page.wait_for_selector("li.hit")
    assert SEEDED in page.locator("li.hit").first.inner_text()
    assert page.locator("li.hit mark").count() >= 3
    assert "ms (hybrid)" in page.locator("p.took").inner_text()
    # Tab reaches the first hit's link, Enter opens it at its chunk.
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.closest('li.hit') !== null"):
            break
    else:
        pytest.fail("Tab never reached a hit")
    page.keyboard.press("Enter")
    page.wait_for_url("**/document/**#chunk")
    chunk = page.locator("span.chunk").first
    assert SEEDED in page.locator("span.chunk").all_inner_texts()[0] or chunk.is_visible()
    assert page.evaluate(
        "(() => { const r = document.getElementById('chunk').getBoundingClientRect();"
        " return r.top >= 0 && r.top < window.innerHeight; })()"
    )
    watch.clean()


def _question(page: Any) -> None:
    """The question, on three excerpts and a short answer: a shared two-core machine."""
    page.fill("textarea[name=q]", QUESTION)
    page.click("details.filters summary")
    page.fill("input[name=limit]", "3")
    page.fill("input[name=tokens]", "64")


def test_an_answer_streams_and_its_citation_opens_the_document(browser: Any, site: Site) -> None:
    page, watch = _page(browser, site)
    page.goto(site.url + "/ask")
    _question(page)
    page.click("button[type=submit]")
    lengths: list[int] = []
    deadline = time.monotonic() + 240
    while page.get_attribute("#result", "data-state") == "running":
        assert time.monotonic() < deadline, "no answer in four minutes"
        if page.locator("#draft").count():
            lengths.append(len(page.locator("#draft").inner_text()))
        time.sleep(0.05)
    assert page.get_attribute("#result", "data-state") == "done"
    growing = sorted({n for n in lengths if n > 0})
    assert len(growing) >= 2, f"the answer arrived in one piece: {lengths[-20:]}"
    assert page.locator("#answer").count() == 1
    cites = page.locator("#answer a.cite")
    assert cites.count() >= 1, page.locator("#result").inner_text()
    target = cites.first.get_attribute("href")
    assert target is not None and target.startswith("#excerpt-")
    cites.first.click()
    excerpt = page.locator(target)
    expected = excerpt.locator("a.doc").inner_text()
    excerpt.locator("a.doc").click()
    page.wait_for_url("**/document/**")
    assert page.locator("h1").inner_text() == expected
    assert page.locator("span.chunk").count() >= 1
    watch.clean()


def _wait_for_words(page: Any, within: float = 120) -> None:
    """Until the streamed answer shows some words (polled from here: the page's policy
    forbids the eval that wait_for_function would need)."""
    deadline = time.monotonic() + within
    while not (page.locator("#draft").count() and len(page.locator("#draft").inner_text()) > 20):
        assert time.monotonic() < deadline, "no words streamed"
        time.sleep(0.05)


def test_stop_ends_the_models_generation(browser: Any, site: Site) -> None:
    with slow_model_pages(site) as (base, _port, state):
        page = browser.new_context().new_page()
        page.goto(base + "/ask")
        page.fill("textarea[name=q]", QUESTION)
        page.click("button[type=submit]")
        _wait_for_words(page)
        page.click("#stop")
        assert state.disconnected.wait(10), "the model kept generating after Stop"
        assert page.get_attribute("#result", "data-state") == "stopped"
        # Leaving the page mid-answer stops it too.
        state.disconnected.clear()
        page.click("button[type=submit]")
        _wait_for_words(page)
        page.goto(base + "/search")
        assert state.disconnected.wait(10), "the model kept generating after the page left"


def test_without_javascript_the_answer_arrives_whole(browser: Any, site: Site) -> None:
    page, watch = _page(browser, site, java_script_enabled=False)
    page.goto(site.url + "/ask")
    _question(page)
    # The POST's page comes back when the model has finished: the click does not wait for it.
    with page.expect_navigation(timeout=300_000):
        page.click("button[type=submit]", no_wait_after=True)
    assert page.locator("#answer").count() == 1, page.content()[-3000:]
    assert page.locator("ol.excerpts li").count() >= 1
    watch.clean()


def test_a_graph_vertex_click_recentres(browser: Any, site: Site) -> None:
    page, watch = _page(browser, site)
    page.goto(site.url + f"/graph?v=Document:{site.hostile_id}&hops=1")
    assert page.locator("#start").inner_text().startswith("Document:")
    assert page.locator("svg.graph a.vertex").count() >= 2
    author = page.locator("svg.graph a.vertex.v-Author").first
    author.click()
    page.wait_for_url("**v=Author*")
    assert page.locator("#start").inner_text().startswith("Author:")
    assert page.locator("svg.graph a.vertex.start.v-Author").count() == 1
    # The hop count is kept and can be changed from the form.
    page.select_option("select[name=hops]", "2")
    page.click("form.query button[type=submit]")
    page.wait_for_url("**hops=2*")
    assert "within 2 hops" in page.locator("p.took").first.inner_text()
    watch.clean()


def test_pages_are_readable_at_400_pixels(browser: Any, site: Site) -> None:
    page, watch = _page(browser, site, viewport={"width": 400, "height": 800})
    for path in ("/search?q=quartz", f"/document/{site.hostile_id}", "/facts",
                 f"/graph?v=Document:{site.hostile_id}&hops=2", "/sources", "/ask"):  # fmt: skip
        page.goto(site.url + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 400, (path, width)
    watch.clean()
