"""Each page's body from what the library returned: pure functions of data to ``Html``, so
they are tested without a server, a database or a browser."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
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
    if response.partial:
        head.append(
            tag(
                "p",
                f"Partial: {response.pending_chunks:,} chunks not yet embedded under "
                f"{response.vector_model}; the vector leg ranked what is embedded, the "
                "keyword leg everything.",
                class_="partial",
                role="status",
            )
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
