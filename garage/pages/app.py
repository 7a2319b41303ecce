"""The pages as one ASGI app (Starlette), over the same library functions as the CLI and the
MCP tools. Every read runs on its own read-only connection with a statement timeout (the MCP
runtime's ``reader``); the pages change nothing, and their only action is a link into the
Dagster UI served beside them.

Who may see what: the app is served only on loopback, behind ``garage.webguard.LoopbackGuard``
(``garage_assets.ui`` mounts it beside the Dagster UI), so mail and chats are shown as they are
to the CLI. Answers go to the configured chat model, whose client applies the egress guard
(communications only to a model on this machine).

Asking starts the model's work only on a POST, which the guard refuses from another site's
page; the answer is streamed to ``ask.js`` as JSON lines, and when the browser goes away (the
Stop button, or leaving the page) the request's cancel event stops the generation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from garage.config import GarageConfig
from garage.pages import fact_views, graph_views, source_views, views
from garage.pages.answering import AnswerStream, answer, ask_options
from garage.pages.html import PREFIX, SECURITY_HEADERS, Html, page, tag
from garage.pages.queries import (
    chunk_span,
    distilled_facts,
    distilled_of,
    source_health,
    source_names,
)
from garage.pages.reading import EXPECTED, Pages, shown_error

log = logging.getLogger("garage.pages")

STATIC = {
    "garage.css": "text/css; charset=utf-8",
    "ask.js": "text/javascript; charset=utf-8",
    "icon.svg": "image/svg+xml",
}
FACTS_PER_PAGE = 50
DOCUMENT_CHARS = 100_000  # the most of a document one page shows (the window holds the mark)


def _html(body: Html, status: int = 200) -> HTMLResponse:
    return HTMLResponse(str(body), status_code=status)


def _params(request: Request) -> dict[str, str]:
    return {k: v.strip() for k, v in request.query_params.items() if v.strip()}


async def _form(request: Request) -> dict[str, str]:
    body = (await request.body())[:100_000].decode("utf-8", errors="replace")
    return {k: v[0].strip() for k, v in parse_qs(body).items()}


def create_app(config: GarageConfig, database_url: str | None = None) -> Starlette:
    """The pages under ``/garage``; wrap in the loopback guard before serving. Without
    ``database_url`` the config's database is resolved (and the embedded one started) on the
    first request, so a UI on SQLite storage starts without a database."""
    pages = Pages(config, database_url)

    async def threaded(work: Callable[[], Html], title: str, active: str) -> HTMLResponse:
        try:
            body = await run_in_threadpool(work)
            return _html(page(title, active, body))
        except EXPECTED as error:
            return _html(page(title, active, views.error_box(shown_error(error))), 400)

    # -- Search ---------------------------------------------------------------------------
    async def search_page(request: Request) -> Response:
        params = _params(request)

        def work() -> Html:
            with pages.reader() as conn:
                form = views.search_form(params, source_names(conn))
                if not params.get("q"):
                    return form
                try:
                    response = _search(pages, conn, params)
                except EXPECTED as error:
                    return Html(form + views.error_box(shown_error(error)))
                return Html(form + views.search_results(response))

        return await threaded(work, params.get("q") or "Search", "search")

    # -- Ask ------------------------------------------------------------------------------
    async def ask_page(request: Request) -> Response:
        if request.method == "GET":
            return _html(page("Ask", "ask", views.ask_form(), scripts=["ask.js"]))
        form = await _form(request)
        question, agent = form.get("q", ""), bool(form.get("agent"))
        cancel = threading.Event()

        def work() -> Html:
            options = ask_options(form)
            result = answer(pages, question, agent, cancel, lambda _: None, options)
            return Html(views.ask_form(question, agent, *options) + result)

        # Leaving the page before the answer is whole closes the request: the model stops.
        answering = asyncio.ensure_future(threaded(work, "Ask", "ask"))
        try:
            while not answering.done():
                await asyncio.wait({answering}, timeout=0.5)
                if not answering.done() and await request.is_disconnected():
                    cancel.set()
            return answering.result()
        finally:
            cancel.set()

    async def ask_stream(request: Request) -> Any:
        form = await _form(request)
        try:
            options = ask_options(form)
        except ValueError as error:
            return Response(json.dumps({"error": str(error)}) + "\n", status_code=400,
                            media_type="application/x-ndjson")  # fmt: skip
        return AnswerStream(pages, form.get("q", ""), bool(form.get("agent")), options)

    # -- Document -------------------------------------------------------------------------
    async def document_page(request: Request) -> Response:
        try:
            document_id = int(request.path_params["document_id"])
            params = _params(request)
            mark = _mark(params)
        except ValueError:
            return _html(page("Document", "", views.error_box("no such document")), 404)

        def work() -> Html:
            from garage.facts.browse import FactQuery, list_facts
            from garage.search.documents import get_document

            with pages.reader() as conn:
                span = mark
                if span is None and params.get("chunk", "").isdigit():
                    found = chunk_span(conn, int(params["chunk"]))
                    if found and found[0] == document_id:
                        span = (found[1], found[2])
                start = 0
                if span is not None and span[1] > DOCUMENT_CHARS:
                    start = max(0, span[0] - DOCUMENT_CHARS // 4)
                doc = get_document(conn, document_id=document_id, start=start,
                                   length=DOCUMENT_CHARS)  # fmt: skip
                facts = list_facts(
                    conn, FactQuery(document_id=document_id, limit=500, context_chars=0)
                ).facts
            return views.document_page(doc, facts, span)

        return await threaded(work, f"Document {document_id}", "")

    # -- Facts ----------------------------------------------------------------------------
    async def facts_page(request: Request) -> Response:
        params = _params(request)

        def work() -> Html:
            from garage.facts.browse import FactQuery, fact_stats, list_facts

            offset = int(params.get("offset", "0") or 0)
            with pages.reader() as conn:
                sources = source_names(conn)
                stats = fact_stats(conn)
                classes = sorted({c.fact_class for c in stats.by_source_and_class})
                form = fact_views.facts_form(params, sources, classes, sorted(stats.by_prompt))
                if params.get("distilled", "").isdigit():
                    groups = distilled_facts(conn, ids=[int(params["distilled"])], members=200)
                    return Html(form + fact_views.distilled_list(groups))
                query = FactQuery(
                    text=params.get("text"),
                    substring=bool(params.get("substring")),
                    sources=tuple(filter(None, [params.get("source")])),
                    document_id=int(params["document"]) if params.get("document") else None,
                    classes=tuple(filter(None, [params.get("class")])),
                    corpus_classes=tuple(filter(None, [params.get("corpus")])),
                    prompts=tuple(filter(None, [params.get("prompt")])),
                    limit=FACTS_PER_PAGE,
                    offset=offset,
                    context_chars=160,
                )
                listing = list_facts(conn, query)
                membership = distilled_of(conn, [f.fact_id for f in listing.facts])
                distilled = (
                    distilled_facts(conn, text=params.get("text"), limit=10) if not offset else []
                )
            return Html(
                form
                + fact_views.fact_stats_table(stats)
                + fact_views.fact_list(listing, membership, params, offset, FACTS_PER_PAGE)
                + fact_views.distilled_list(distilled)
            )

        return await threaded(work, "Facts", "facts")

    # -- Graph ----------------------------------------------------------------------------
    async def graph_page(request: Request) -> Response:
        params = _params(request)

        def work() -> Html:
            from garage.graph import (
                GraphUnavailable,
                find_vertices,
                graph_labels,
                neighbourhood,
            )

            hops = int(params.get("hops", "1") or 1)
            with pages.reader() as conn:
                try:
                    labels = graph_labels(conn)
                except GraphUnavailable as error:
                    return _no_graph(str(error))
                parts = [graph_views.graph_form(params, labels)]
                if params.get("find"):
                    label = params.get("label")
                    found = find_vertices(
                        conn, params["find"], labels=(label,) if label else (), limit=30
                    )
                    parts.append(graph_views.found_vertices(found, hops))
                if params.get("v"):
                    parts.append(graph_views.neighbourhood_view(neighbourhood(conn, params["v"],
                                                                        hops=hops)))  # fmt: skip
                elif not params.get("find"):
                    parts.append(tag("p", "Find a document, an author or a fact to start from.",
                                     class_="none"))  # fmt: skip
            return Html("".join(parts))

        return await threaded(work, "Graph", "graph")

    # -- Sources --------------------------------------------------------------------------
    async def sources_page(request: Request) -> Response:
        def work() -> Html:
            from garage.search import corpus_stats, list_sources
            from garage.status import source_status

            with pages.reader() as conn:
                sources = list_sources(conn)
                health = {s.name: source_health(conn, s.name) for s in sources}
                # Embedding per source and model, with the time left: what `garage status` says.
                standing = {s.name: s.models for s in source_status(conn)}
                stats = corpus_stats(conn)
            return source_views.sources_page(sources, health, standing, stats)

        return await threaded(work, "Sources", "sources")

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found", status_code=404, media_type="text/plain")
        body = resources.files("garage.pages").joinpath("static", name).read_bytes()
        return Response(body, media_type=STATIC[name])

    async def home(request: Request) -> Response:
        return RedirectResponse(f"{PREFIX}/search", status_code=303)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        try:
            yield
        finally:
            pages.close()

    app = Starlette(
        lifespan=lifespan,
        routes=[
            Route(PREFIX, home),
            Route(f"{PREFIX}/", home),
            Route(f"{PREFIX}/search", search_page),
            Route(f"{PREFIX}/ask", ask_page, methods=["GET", "POST"]),
            Route(f"{PREFIX}/ask/stream", ask_stream, methods=["POST"]),
            Route(f"{PREFIX}/document/{{document_id}}", document_page),
            Route(f"{PREFIX}/facts", facts_page),
            Route(f"{PREFIX}/graph", graph_page),
            Route(f"{PREFIX}/sources", sources_page),
            Route(f"{PREFIX}/static/{{name}}", static),
        ],
    )
    return SecurityHeaders(app)  # type: ignore[return-value]


def _mark(params: Mapping[str, str]) -> tuple[int, int] | None:
    if "s" in params and "e" in params:
        start, end = int(params["s"]), int(params["e"])
        if 0 <= start < end:
            return start, end
    return None


def _no_graph(reason: str) -> Html:
    return Html(
        '<section class="nograph"><h1>No graph here</h1>'
        + tag("p", reason)
        + "<p>The graph lives in Apache AGE. <code>scripts/pg-age start</code> runs a "
        "PostgreSQL with AGE and prints its URL; set it as <code>database.url</code> (or "
        "<code>GARAGE_DATABASE_URL</code>), then <code>garage graph rebuild</code> (or "
        "materialize the <code>graph</code> asset in Dagster).</p></section>"
    )


def _search(pages: Pages, conn: Any, params: Mapping[str, str]) -> Any:
    from garage.search import SearchQuery, search
    from garage.search.filters import parse_date

    query = SearchQuery(
        text=params["q"][:10_000],
        limit=20,
        mode=params.get("mode", "hybrid"),  # type: ignore[arg-type]
        sources=tuple(filter(None, [params.get("source")])),
        corpus_classes=tuple(filter(None, [params.get("class")])),  # type: ignore[arg-type,list-item]
        authors=tuple(filter(None, [params.get("author")])),
        date_from=parse_date("from", params.get("from")),
        date_to=parse_date("to", params.get("to"), end_of_day=True),
        direction=params.get("direction") or None,  # type: ignore[arg-type]
        sender=params.get("sender") or None,
    )
    return search(conn, pages.config, query, client=pages.client)


class SecurityHeaders:
    """The Content-Security-Policy and friends on every response of the pages."""

    def __init__(self, app: Any):
        self.app = app
        self.headers = [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *self.headers]}
            await send(message)

        await self.app(scope, receive, with_headers)
