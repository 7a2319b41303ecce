"""Each page's body from what the library returned: pure functions of data to ``Html``, so
they are tested without a server, a database or a browser."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from garage.pages.html import (
    Html,
    Span,
    esc,
    join,
    link,
    marked,
    options,
    spans_marked,
    tag,
    url,
    when,
    words_of,
)

MODES = (("hybrid", "hybrid"), ("keyword", "keyword"), ("vector", "vector"))
CLASSES = (("", "any kind"), ("document", "documents"), ("code", "code"),
           ("communication", "mail and chats"))  # fmt: skip
DIRECTIONS = (("", "sent or received"), ("sent", "sent"), ("received", "received"))


def shown_path(uri: str) -> str:
    """A file URI as the path it names (percent-escapes undone), to be read by a person."""
    from urllib.parse import unquote

    return unquote(uri.removeprefix("file://")) if uri.startswith("file://") else uri


def document_url(document_id: int, start: int | None = None, end: int | None = None) -> str:
    if start is None or end is None:
        return url(f"/document/{document_id}")
    return url(f"/document/{document_id}", {"s": start, "e": end}, fragment="chunk")


def field(label: str, control: Html) -> Html:
    return Html(f"<label>{esc(label)} {control}</label>")


def text_input(name: str, value: object, **attributes: object) -> Html:
    extra = "".join(
        f' {k.replace("_", "-")}="{esc(v)}"' for k, v in attributes.items() if v is not None
    )
    return Html(f'<input name="{esc(name)}" value="{esc(value or "")}"{extra}>')


def select(name: str, values: Sequence[tuple[str, str]], chosen: object) -> Html:
    return Html(f'<select name="{esc(name)}">{options(values, chosen)}</select>')


def error_box(message: str) -> Html:
    return Html(f'<p class="error" role="alert">{esc(message)}</p>')


# -- Search -----------------------------------------------------------------------------------


def search_form(params: Mapping[str, str], sources: Sequence[str]) -> Html:
    source_options = [("", "every source"), *((s, s) for s in sources)]
    return Html(
        f'<form class="query" method="get" action="{url("/search")}" role="search">'
        + text_input(
            "q",
            params.get("q"),
            type="search",
            autofocus="autofocus",
            aria_label="Search the index",
            placeholder="Search the index",
        )  # fmt: skip
        + '<button type="submit">Search</button>'
        + '<details class="filters"><summary>Mode and filters</summary><div class="grid">'
        + field("mode", select("mode", MODES, params.get("mode", "hybrid")))
        + field("source", select("source", source_options, params.get("source", "")))
        + field("kind", select("class", CLASSES, params.get("class", "")))
        + field("author", text_input("author", params.get("author")))
        + field("from", text_input("from", params.get("from"), type="date"))
        + field("to", text_input("to", params.get("to"), type="date"))
        + field("direction", select("direction", DIRECTIONS, params.get("direction", "")))
        + field("sender", text_input("sender", params.get("sender")))
        + "</div></details></form>"
    )


def search_results(response: Any, page_ms: float | None = None) -> Html:
    words = words_of(response.query)
    took = f"{len(response.hits)} hits in {response.took_ms:.0f} ms ({response.mode})"
    head = [tag("p", took, class_="took")]
    if response.degraded:
        head.append(
            Html(f'<p class="degraded" role="status">Degraded: {esc(response.degraded)}</p>')
        )
    items = []
    for hit in response.hits:
        date = hit.metadata.get("date")
        about = join(
            (tag("span", value, class_=kind) for kind, value in (
                ("source", hit.source), ("class", hit.corpus_class), ("author", hit.author),
                ("date", when(date) if date else None),
                ("fact", f"fact: {hit.fact_class}" if hit.fact_id else None),
            ) if value),
            " · ",
        )  # fmt: skip
        heading = hit.metadata.get("heading")
        items.append(
            '<li class="hit"><h3>'
            + link(
                document_url(hit.document_id, hit.start_offset, hit.end_offset),
                hit.title or hit.uri,
            )  # fmt: skip
            + "</h3>"
            + f'<p class="about">{about}</p>'
            + tag("p", shown_path(hit.uri), class_="path")
            + (tag("p", heading, class_="heading") if heading else "")
            + f'<p class="excerpt">{marked(hit.excerpt, words)}</p></li>'
        )
    if not response.hits:
        items.append('<li class="none">Nothing matched.</li>')
    return Html(join(head) + '<ol class="hits">' + "".join(items) + "</ol>")


# -- Ask --------------------------------------------------------------------------------------


def ask_form(question: str = "", agent: bool = False, excerpts: int = 6, tokens: int = 400) -> Html:
    checked = " checked" if agent else ""
    return Html(
        f'<form class="query" id="ask" method="post" action="{url("/ask")}">'
        + Html(
            '<textarea name="q" rows="2" autofocus required aria-label="Your question"'
            f' placeholder="Ask a question of your files">{esc(question)}</textarea>'
        )
        + '<div class="row"><button type="submit">Ask</button>'
        + '<button type="button" id="stop" hidden>Stop</button>'
        + f'<label><input type="checkbox" name="agent" value="1"{checked}> let the model'
        + " search and read (rag_agent)</label></div>"
        + '<details class="filters"><summary>Options</summary><div class="grid">'
        + field("excerpts", text_input("limit", excerpts, type="number", min="1", max="20"))
        + field(
            "longest answer (tokens)",
            text_input("tokens", tokens, type="number", min="16", max="4096"),
        )  # fmt: skip
        + "</div></details></form>"
        + '<div id="progress" role="status" aria-live="polite"></div>'
        + '<div id="result" aria-live="polite"></div>'
    )


_CITE = re.compile(r"\[(\d{1,3})\]")


def answer_text(answer: str, numbers: set[int]) -> Html:
    """The answer escaped, each ``[n]`` that names an excerpt a link to it."""
    out: list[str] = []
    last = 0
    for match in _CITE.finditer(answer):
        out.append(esc(answer[last : match.start()]))
        n = int(match.group(1))
        if n in numbers:
            out.append(f'<a class="cite" href="#excerpt-{n}">[{n}]</a>')
        else:
            out.append(esc(match.group(0)))
        last = match.end()
    out.append(esc(answer[last:]))
    return Html("".join(out))


def ask_result(result: Any) -> Html:
    """An AskResult: the answer (or that the excerpts do not hold one), and the excerpts."""
    numbers = {c.number for c in result.citations}
    parts: list[str] = []
    if result.not_in_excerpts:
        parts.append(
            '<p class="answer refusal" id="answer"><strong>Not in the excerpts.</strong> '
            "None of the excerpts below states the answer.</p>"
        )
    else:
        parts.append(f'<p class="answer" id="answer">{answer_text(result.answer, numbers)}</p>')
    facts = [f"{result.model}", f"{result.search_mode} search", f"{result.took_ms / 1000:.1f} s"]
    if result.finish != "stop":
        facts.append("cut at the token limit" if result.finish == "length" else "out of time")
    parts.append(tag("p", " · ".join(facts), class_="took"))
    if result.degraded:
        parts.append(f'<p class="degraded">Degraded: {esc(result.degraded)}</p>')
    for note in result.notes:
        parts.append(tag("p", note, class_="note"))
    if result.withheld:
        parts.append(
            tag(
                "p",
                f"{result.withheld} excerpts of mail and chats were kept from a model "
                "host that is not this machine.",
                class_="note",
            )  # fmt: skip
        )
    parts.append('<h2>Excerpts</h2><ol class="excerpts">')
    cited = set(result.cited)
    for c in result.citations:
        mark = " cited" if c.number in cited else ""
        parts.append(
            f'<li id="excerpt-{c.number}" class="excerpt{mark}" value="{c.number}">'
            + link(
                document_url(c.document_id, c.start_offset, c.end_offset),
                c.title or shown_path(c.uri),
                class_="doc",
            )  # fmt: skip
            + tag("span", f" {c.source} · {c.corpus_class}", class_="about")
            + tag("blockquote", c.excerpt)
            + "</li>"
        )
    parts.append("</ol>")
    return Html("".join(parts))


def agent_result(result: Any) -> Html:
    """An AgentResult: the answer, each step the model took, and the documents it saw."""
    parts = [f'<p class="answer" id="answer">{esc(result.answer)}</p>']
    stopped = "answered" if result.stopped == "answer" else "stopped at the step limit"
    parts.append(tag("p", f"{result.model} · {len(result.steps)} steps · {stopped}",
                     class_="took"))  # fmt: skip
    for note in result.notes:
        parts.append(tag("p", note, class_="note"))
    parts.append('<h2>Steps</h2><ol class="steps">')
    for step in result.steps:
        what = step.tool or "(no tool)"
        outcome = "" if step.ok else f" — error: {step.error}"
        args = ", ".join(f"{k}={v!r}" for k, v in step.arguments.items())
        parts.append(
            "<li><details><summary>"
            + esc(f"{what}({args}){outcome}")
            + "</summary>"
            + tag("pre", step.result)
            + "</details></li>"
        )
    parts.append('</ol><h2>Documents it read</h2><ol class="excerpts">')
    for n, c in enumerate(result.citations, 1):
        parts.append(
            f'<li id="excerpt-{n}">'
            + link(document_url(c.document_id), c.title or shown_path(c.uri), class_="doc")
            + tag("span", f" {c.source} · {c.corpus_class}", class_="about")
            + "</li>"
        )
    parts.append("</ol>")
    return Html("".join(parts))


# -- Document ---------------------------------------------------------------------------------


def document_page(doc: Any, facts: Sequence[Any], mark: tuple[int, int] | None) -> Html:
    spans = [Span(f.start_offset, f.end_offset, "fact", f.fact_class) for f in facts]
    if mark is not None:
        spans.append(Span(mark[0], mark[1], "chunk", anchor="chunk"))
    rows = [
        ("source", doc.source), ("kind", doc.corpus_class), ("path", shown_path(doc.uri)),
        ("author", f"{doc.author or 'unknown'} ({doc.attribution})"),
        ("modified", when(doc.modified_at)), ("indexed", when(doc.indexed_at)),
        ("date", when(doc.metadata.get("date")) if doc.metadata.get("date") else None),
        ("chunks", doc.chunks), ("characters", doc.total_chars),
    ]  # fmt: skip
    meta = join(Html(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>") for k, v in rows if v not in (None, ""))
    shown = ""
    if doc.start > 0 or doc.truncated:
        shown = tag(
            "p", f"Characters {doc.start}–{doc.end} of {doc.total_chars} are shown.", class_="note"
        )
    fact_items = join(
        Html("<li>" + tag("span", f.fact_class, class_="class") + " " + tag("q", f.text) + "</li>")
        for f in facts
    )
    graph = link(url("/graph", {"v": f"Document:{doc.document_id}"}), "Its graph neighbourhood")
    facts_link = link(url("/facts", {"document": doc.document_id}), "its facts on the Facts page")
    return Html(
        tag("h1", doc.title or shown_path(doc.uri))
        + f'<dl class="meta">{meta}</dl>'
        + f'<p class="links">{graph} · {facts_link}</p>'
        + shown
        + f'<pre class="text">{spans_marked(doc.content, spans, doc.start)}</pre>'
        + (
            f'<h2>Facts stated in it ({len(facts)})</h2><ul class="facts">{fact_items}</ul>'
            if facts
            else ""
        )  # fmt: skip
    )


# -- Facts ------------------------------------------------------------------------------------


def facts_form(params: Mapping[str, str], sources: Sequence[str], classes: Sequence[str],
               prompts: Sequence[str]) -> Html:  # fmt: skip
    def choices(values: Sequence[str], empty: str) -> list[tuple[str, str]]:
        return [("", empty), *((v, v) for v in values)]

    substring = " checked" if params.get("substring") else ""
    return Html(
        f'<form class="query" method="get" action="{url("/facts")}">'
        + text_input(
            "text",
            params.get("text"),
            type="search",
            autofocus="autofocus",
            aria_label="Words in the fact",
            placeholder="Words in the fact",
        )  # fmt: skip
        + '<button type="submit">Filter</button><div class="grid">'
        + '<label class="check"><input type="checkbox" name="substring" value="1"'
        + f"{substring}> substring</label>"
        + field(
            "source", select("source", choices(sources, "every source"), params.get("source", ""))
        )  # fmt: skip
        + field("class", select("class", choices(classes, "every class"), params.get("class", "")))
        + field("kind", select("corpus", CLASSES, params.get("corpus", "")))
        + field(
            "prompt", select("prompt", choices(prompts, "every prompt"), params.get("prompt", ""))
        )  # fmt: skip
        + field(
            "document",
            text_input("document", params.get("document"), inputmode="numeric", size="8"),
        )  # fmt: skip
        + "</div></form>"
    )


def fact_stats_table(stats: Any) -> Html:
    rows = join(
        Html(
            "<tr>"
            + tag("td", link(url("/facts", {"source": c.source}), c.source))
            + tag(
                "td", link(url("/facts", {"source": c.source, "class": c.fact_class}), c.fact_class)
            )  # fmt: skip
            + tag("td", c.facts, class_="n")
            + tag("td", c.documents, class_="n")
            + "</tr>"
        )
        for c in stats.by_source_and_class
    )
    prompts = ", ".join(f"{name}: {n}" for name, n in stats.by_prompt.items())
    return Html(
        tag(
            "p",
            f"{stats.facts} facts in {stats.documents_with_facts} documents"
            + (f" (by prompt: {prompts})" if prompts else ""),
            class_="took",
        )  # fmt: skip
        + "<details><summary>Counts per source and class</summary>"
        + '<table><thead><tr><th>source</th><th>class</th><th class="n">facts</th>'
        + f'<th class="n">documents</th></tr></thead><tbody>{rows}</tbody></table></details>'
    )


def fact_list(listing: Any, distilled: Mapping[int, int], params: Mapping[str, str],
              offset: int, limit: int) -> Html:  # fmt: skip
    items = []
    for f in listing.facts:
        group = distilled.get(f.fact_id)
        items.append(
            '<li class="fact">'
            + tag("span", f.fact_class, class_="class")
            + f' <span class="context">…{esc(f.before)}<mark class="fact">{esc(f.text)}</mark>'
            + f"{esc(f.after)}…</span>"
            + '<p class="about">'
            + link(
                document_url(f.document_id, f.start_offset, f.end_offset),
                f.title or shown_path(f.uri),
            )
            + esc(f" · {f.source} · {f.prompt_name} · {f.alignment}")
            + (
                " · " + link(url("/facts", {"distilled": group}), f"distilled #{group}")
                if group
                else ""
            )  # fmt: skip
            + "</p></li>"
        )
    if not listing.facts:
        items.append('<li class="none">No facts match.</li>')
    pager = []
    if offset > 0:
        pager.append(link(url("/facts", {**params, "offset": max(0, offset - limit)}),
                          "← earlier"))  # fmt: skip
    if offset + limit < listing.total:
        pager.append(link(url("/facts", {**params, "offset": offset + limit}), "later →"))
    shown = f"{listing.total} matching; {offset + 1}–{offset + len(listing.facts)} shown"
    return Html(
        tag("p", shown if listing.facts else "0 matching", class_="took")
        + '<ul class="factlist">' + "".join(items) + "</ul>"
        + f'<p class="pager">{join(pager, " · ")}</p>'
    )  # fmt: skip


def distilled_list(groups: Sequence[Any]) -> Html:
    if not groups:
        return Html("")
    items = []
    for g in groups:
        members = join(
            Html(
                "<li>"
                + tag("q", m.text)
                + " — "
                + link(
                    document_url(m.document_id, m.start_offset, m.end_offset),
                    m.title or shown_path(m.uri),
                )  # fmt: skip
                + "</li>"
            )
            for m in g.members
        )
        statement = g.statement or g.representative or ""
        items.append(
            f'<li class="distilled" id="distilled-{g.id}">'
            + link(url("/facts", {"distilled": g.id}), f"#{g.id}")
            + " "
            + tag("span", g.fact_class, class_="class")
            + " "
            + tag("strong", statement)
            + tag("span", f" {g.nodes} members · {g.status}", class_="about")
            + f"<ul>{members}</ul></li>"
        )
    return Html(f'<h2>Distilled facts</h2><ul class="distilledlist">{"".join(items)}</ul>')


# -- Graph ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Placed:
    vertex: Any
    x: float
    y: float


SIZE = 800
LABEL_CHARS = 28


def vertex_ref(vertex: Any) -> str:
    return f"{vertex.label}:{vertex.id}" if vertex.id is not None else vertex.vid


def vertex_name(vertex: Any) -> str:
    title = vertex.title or vertex.properties.get("name") or vertex_ref(vertex)
    return str(title)


def rings(hood: Any) -> list[Placed]:
    """One ring per hop around the start, each ring's vertices spread evenly round it, a
    little turned from the ring inside so that spokes do not line up."""
    by_ring: dict[int, list[Any]] = {}
    for vertex in hood.vertices:
        by_ring.setdefault(vertex.ring, []).append(vertex)
    centre = SIZE / 2
    step = (SIZE / 2 - 60) / max(1, max(by_ring) if by_ring else 1)
    placed: list[Placed] = []
    for ring, members in sorted(by_ring.items()):
        if ring == 0:
            placed.extend(Placed(v, centre, centre) for v in members)
            continue
        members = sorted(members, key=lambda v: (v.label, vertex_name(v)))
        for i, vertex in enumerate(members):
            angle = 2 * math.pi * i / len(members) + ring * 0.37 - math.pi / 2
            placed.append(
                Placed(
                    vertex,
                    centre + step * ring * math.cos(angle),
                    centre + step * ring * math.sin(angle),
                )  # fmt: skip
            )
    return placed


def _css_class(label: str) -> str:
    return "v-" + re.sub(r"[^A-Za-z0-9_]", "", label)


def graph_svg(hood: Any) -> Html:
    placed = rings(hood)
    where = {p.vertex.vid: p for p in placed}
    lines = []
    for edge in hood.edges:
        a, b = where.get(edge.start), where.get(edge.end)
        if a and b:
            lines.append(
                f'<line x1="{a.x:.1f}" y1="{a.y:.1f}" x2="{b.x:.1f}" y2="{b.y:.1f}">'
                f"<title>{esc(edge.label)}</title></line>"
            )
    circles = [
        f'<circle class="ring" cx="{SIZE / 2}" cy="{SIZE / 2}" r="{r:.1f}"/>'
        for r in sorted({math.hypot(p.x - SIZE / 2, p.y - SIZE / 2) for p in placed} - {0.0})
    ]
    crowded = len(placed) > 40
    nodes = []
    for p in placed:
        v = p.vertex
        start = v.vid == hood.start.vid
        name = vertex_name(v)
        short = name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"
        label = "" if crowded and v.ring > 1 else (
            f'<text x="{p.x:.1f}" y="{p.y + 22:.1f}">{esc(short)}</text>'
        )  # fmt: skip
        href = url("/graph", {"v": vertex_ref(v), "hops": hood.hops})
        nodes.append(
            f'<a class="vertex {_css_class(v.label)}{" start" if start else ""}"'
            f' href="{esc(href)}" data-vid="{esc(v.vid)}">'
            f"<title>{esc(v.label)}: {esc(name)}</title>"
            f'<circle cx="{p.x:.1f}" cy="{p.y:.1f}" r="{14 if start else 9}"/>{label}</a>'
        )
    return Html(
        f'<svg class="graph" viewBox="0 0 {SIZE} {SIZE}" role="img"'
        f' aria-label="{esc(len(placed))} vertices around {esc(vertex_name(hood.start))}">'
        f'<g class="rings">{"".join(circles)}</g><g class="edges">{"".join(lines)}</g>'
        f'<g class="vertices">{"".join(nodes)}</g></svg>'
    )


def graph_form(params: Mapping[str, str], labels: Sequence[Any]) -> Html:
    chips = join(
        link(
            url(
                "/graph",
                {
                    "find": params.get("find"),
                    "label": lab.label,
                    "v": params.get("v"),
                    "hops": params.get("hops"),
                },
            ),
            f"{lab.label} {lab.count}",
            class_="chip" + (" on" if params.get("label") == lab.label else ""),
        )  # fmt: skip
        if lab.kind == "vertex"
        else tag("span", f"{lab.label} {lab.count}", class_="chip edge")
        for lab in labels
    )
    hops = params.get("hops", "1")
    return Html(
        f'<p class="labels">{chips}</p>'
        f'<form class="query" method="get" action="{url("/graph")}">'
        + text_input("find", params.get("find"), type="search", autofocus="autofocus",
                     aria_label="Find a vertex by title", placeholder="Find a title, name or fact")
        + (Html(f'<input type="hidden" name="label" value="{esc(params["label"])}">')
           if params.get("label") else "")
        + (Html(f'<input type="hidden" name="v" value="{esc(params["v"])}">')
           if params.get("v") else "")
        + field("hops", select("hops", [(str(n), str(n)) for n in range(1, 5)], hops))
        + '<button type="submit">Go</button></form>'
    )  # fmt: skip


def found_vertices(vertices: Sequence[Any], hops: int) -> Html:
    if not vertices:
        return tag("p", "No vertex has that in its title.", class_="none")
    return Html(
        '<ul class="found">'
        + "".join(
            "<li>"
            + link(url("/graph", {"v": vertex_ref(v), "hops": hops}), vertex_name(v))
            + tag("span", f" {v.label}", class_="about")
            + "</li>"
            for v in vertices
        )
        + "</ul>"
    )


def neighbourhood_view(hood: Any) -> Html:
    start = hood.start
    by_ring: dict[int, list[Any]] = {}
    for v in hood.vertices:
        by_ring.setdefault(v.ring, []).append(v)
    listing = []
    for ring, members in sorted(by_ring.items()):
        if ring == 0:
            continue
        entries = "".join(
            "<li>" + link(url("/graph", {"v": vertex_ref(v), "hops": hood.hops}), vertex_name(v))
            + tag("span", f" {v.label}", class_="about") + "</li>"
            for v in sorted(members, key=lambda v: (v.label, vertex_name(v)))
        )  # fmt: skip
        listing.append(f"<h3>{ring} hop{'s' if ring > 1 else ''}</h3><ul>{entries}</ul>")
    doc_link = ""
    if start.label == "Document" and start.id is not None:
        doc_link = tag("p", link(document_url(start.id), "Open the document"), class_="links")
    truncated = tag("p", "Cut at 500 vertices.", class_="note") if hood.truncated else ""
    return Html(
        '<h2 id="start">'
        + esc(f"{start.label}: {vertex_name(start)}")
        + "</h2>"
        + tag("p", f"{len(hood.vertices)} vertices and {len(hood.edges)} edges within "
                   f"{hood.hops} hop{'s' if hood.hops > 1 else ''}", class_="took")  # fmt: skip
        + Html(doc_link)
        + truncated
        + graph_svg(hood)
        + '<div class="ringlist">' + "".join(listing) + "</div>"
    )  # fmt: skip


# -- Sources ----------------------------------------------------------------------------------


def dagster_partition_url(source: str) -> str:
    """The source's partition of the ingest assets in the Dagster UI, served beside the pages,
    where Materialize runs it."""
    from urllib.parse import quote

    return f"/assets/documents?view=partitions&partition={quote(source, safe='')}"


def sources_page(sources: Sequence[Any], health: Mapping[str, Any], stats: Any) -> Html:
    by_class = ", ".join(f"{k}: {v}" for k, v in stats.documents_by_class.items())
    models = ", ".join(
        f"{m.name}{' (default)' if m.is_default else ''}: {m.vectors} vectors"
        for m in stats.embedding_models
    )
    parts: list[str] = [
        tag("p", f"{stats.sources} sources, {stats.documents} documents ({by_class}), "
                 f"{stats.chunks} chunks, {stats.authors} authors", class_="took"),
        tag("p", f"Embedding models: {models or 'none registered'}", class_="took"),
    ]  # fmt: skip
    for s in sources:
        h = health[s.name]
        run = h.last_run
        if run is None:
            state = "never run"
        elif run.completed:
            state = f"complete, finished {when(run.finished_at)}"
        elif run.finished_at is None:
            state = f"running or interrupted, started {when(run.started_at)}"
        else:
            state = f"incomplete, finished {when(run.finished_at)}"
        why = (run.stop_reason or run.note) if run else None
        counts = (
            ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in run.counts.items() if v) if run
            else ""
        )  # fmt: skip
        pending = ", ".join(f"{name}: {n}" for name, n in h.pending.items()) or "no model"
        outcomes = "".join(
            "<li>" + tag("span", o.outcome, class_=f"outcome {o.outcome}") + " "
            + tag("code", o.uri) + " — " + esc(o.reason) + "</li>"
            for o in h.outcomes
        )  # fmt: skip
        more = sum(h.outcome_counts.values()) - len(h.outcomes)
        outcome_counts = ", ".join(f"{k} {v}" for k, v in sorted(h.outcome_counts.items()))
        parts.append(
            '<section class="source">'
            + tag("h2", s.name)
            + tag("p", f"{s.kind} · {s.corpus_class} · {', '.join(s.roots)}", class_="about")
            + '<dl class="meta">'
            + f"<dt>documents</dt><dd>{esc(s.documents)}</dd>"
            + f"<dt>chunks</dt><dd>{esc(s.chunks)}</dd>"
            + f"<dt>last run</dt><dd>{esc(state)}</dd>"
            + (f"<dt>stopped</dt><dd>{esc(why)}</dd>" if why else "")
            + (f"<dt>counts</dt><dd>{esc(counts)}</dd>" if counts else "")
            + f"<dt>pending embeddings</dt><dd>{esc(pending)}</dd>"
            + "</dl>"
            + '<p class="links">'
            + link(dagster_partition_url(s.name), "Materialize in Dagster")
            + " · "
            + link(url("/search", {"source": s.name}), "search it")
            + " · "
            + link(url("/facts", {"source": s.name}), "its facts")
            + "</p>"
            + (f"<details><summary>Files not indexed ({esc(outcome_counts)})</summary>"
               f'<ul class="outcomes">{outcomes}</ul>'
               + (tag("p", f"and {more} more", class_="note") if more > 0 else "")
               + "</details>" if h.outcomes else "")
            + "</section>"
        )  # fmt: skip
    if not sources:
        parts.append(tag("p", "No sources yet: `garage sources add NAME FOLDER`.", class_="none"))
    # Every piece above was built from escaped parts.
    return Html("".join(parts))
