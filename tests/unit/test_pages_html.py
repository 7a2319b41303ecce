"""The pages' HTML helpers: every string from the index is escaped, marks never cross tags."""

from __future__ import annotations

from types import SimpleNamespace

from garage.pages.graph_views import graph_svg, rings
from garage.pages.html import Html, Span, esc, marked, page, spans_marked, tag, url
from garage.pages.views import answer_text, shown_path


def test_escaping_covers_markup_and_attribute_quotes() -> None:
    assert esc('"><img src=x onerror=alert(1)>') == "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
    assert esc(Html("<b>kept</b>")) == "<b>kept</b>"
    assert tag("a", "<x>", href='" onclick="y') == (
        '<a href="&quot; onclick=&quot;y">&lt;x&gt;</a>'
    )
    assert "<script>" not in page("<script>", "search", "<script>alert(1)</script>")


def test_marked_words_and_escaped_text_between() -> None:
    text = "Quartz <b>lantern</b> quartzite"
    assert marked(text, ["quartz", "lantern"]) == (
        "<mark>Quartz</mark> &lt;b&gt;<mark>lantern</mark>&lt;/b&gt; <mark>quartz</mark>ite"
    )


def test_overlapping_spans_are_cut_into_pieces() -> None:
    text = "0123456789"
    out = spans_marked(text, [Span(2, 6, "chunk", anchor="chunk"), Span(4, 8, "fact", "f")])
    assert out == (
        '01<span id="chunk" class="anchor"></span><span class="chunk">23</span>'
        '<span class="chunk"><mark class="fact" title="f">45</mark></span>'
        '<mark class="fact" title="f">67</mark>89'
    )
    # A window of the document: offsets are the document's.
    assert spans_marked("<>", [Span(11, 12, "fact")], offset=10) == (
        '&lt;<mark class="fact" title="">&gt;</mark>'
    )


def test_links_keep_zero_and_drop_empty_values() -> None:
    assert (
        url("/document/3", {"s": 0, "e": 5, "x": ""}, "chunk") == "/garage/document/3?s=0&e=5#chunk"
    )


def test_citations_link_only_excerpts_that_exist() -> None:
    assert answer_text("A [1] and [7] <i>", {1}) == (
        'A <a class="cite" href="#excerpt-1">[1]</a> and [7] &lt;i&gt;'
    )


def test_a_file_uri_is_shown_as_its_path() -> None:
    assert shown_path("file:///n/%22%3E%3Cimg%20src%3Dx%3E.md") == '/n/"><img src=x>.md'


def test_rings_put_each_hop_further_out_and_titles_are_escaped() -> None:
    def vertex(vid: str, ring: int, title: str) -> SimpleNamespace:
        return SimpleNamespace(vid=vid, label="Document", id=int(vid), title=title,
                               properties={}, ring=ring)  # fmt: skip

    start = vertex("1", 0, "<script>start</script>")
    hood = SimpleNamespace(
        start=start, hops=2,
        vertices=[start, vertex("2", 1, "a"), vertex("3", 1, "b"), vertex("4", 2, "c")],
        edges=[SimpleNamespace(start="1", end="2", label="X")],
    )  # fmt: skip
    placed = {p.vertex.vid: p for p in rings(hood)}
    centre = placed["1"]

    def distance(vid: str) -> float:
        return float(((placed[vid].x - centre.x) ** 2 + (placed[vid].y - centre.y) ** 2) ** 0.5)

    assert distance("1") == 0 and abs(distance("2") - distance("3")) < 1e-6
    assert distance("4") > distance("2") > 0
    svg = graph_svg(hood)
    assert "<script>" not in svg and "&lt;script&gt;start" in svg
    assert 'href="/garage/graph?v=Document%3A4&amp;hops=2"' in svg


def _citation(number: int) -> SimpleNamespace:
    return SimpleNamespace(
        number=number, document_id=7, chunk_id=1, uri="file:///n/a.md", title="<i>A</i>",
        source="notes", corpus_class="document", author=None, start_offset=0, end_offset=5,
        excerpt="<script>x",
    )  # fmt: skip


def _asked(**fields: object) -> SimpleNamespace:
    values: dict[str, object] = dict(
        question="q", answer="It is 3 [1].", citations=[_citation(1)], model="m",
        search_mode="hybrid", degraded=None, withheld=0, notes=[], cited=[1], unresolved=[],
        not_in_excerpts=False, finish="stop", took_ms=1200.0,
    )  # fmt: skip
    values.update(fields)
    return SimpleNamespace(**values)


def test_an_answer_links_its_citations_and_a_refusal_is_shown_as_such() -> None:
    from garage.pages.views import ask_result

    answered = ask_result(_asked())
    assert '<a class="cite" href="#excerpt-1">[1]</a>' in answered
    assert 'id="excerpt-1"' in answered and "/garage/document/7?s=0&amp;e=5#chunk" in answered
    assert "&lt;script&gt;x" in answered and "<script>" not in answered
    refused = ask_result(_asked(answer="Not in the excerpts.", not_in_excerpts=True, cited=[]))
    assert "<strong>Not in the excerpts.</strong>" in refused


def test_the_agents_steps_and_documents_are_listed_escaped() -> None:
    from garage.pages.views import agent_result

    step = SimpleNamespace(
        number=1, tool="rag_search", arguments={"query": "<b>"}, ok=True, error=None,
        result="[doc 7] <img src=x>", preset=True, reply="",
    )  # fmt: skip
    cited = SimpleNamespace(document_id=7, uri="file:///n/a.md", title=None, source="notes",
                            corpus_class="document")  # fmt: skip
    result = SimpleNamespace(question="q", answer="<b>done</b>", steps=[step], citations=[cited],
                             model="m", stopped="answer", notes=[])  # fmt: skip
    html = agent_result(result)
    assert "rag_search(query=&#x27;&lt;b&gt;&#x27;)" in html
    assert "&lt;img src=x&gt;" in html and "<img" not in html and "&lt;b&gt;done" in html
    assert 'href="/garage/document/7"' in html and "/n/a.md" in html
