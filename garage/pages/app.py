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
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import contextmanager
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

from psycopg.errors import QueryCanceled
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from garage.config import GarageConfig
from garage.db import DatabaseError
from garage.inference import InferenceError
from garage.pages import views
from garage.pages.html import PREFIX, SECURITY_HEADERS, Html, page, tag
from garage.pages.queries import (
    chunk_span,
    distilled_facts,
    distilled_of,
    source_health,
    source_names,
)

log = logging.getLogger("garage.pages")

STATIC = {
    "garage.css": "text/css; charset=utf-8",
    "ask.js": "text/javascript; charset=utf-8",
    "icon.svg": "image/svg+xml",
}
FACTS_PER_PAGE = 50
DOCUMENT_CHARS = 100_000  # the most of a document one page shows (the window holds the mark)
# What a person can correct, shown on the page rather than as a server error.
EXPECTED = (ValueError, DatabaseError, InferenceError, QueryCanceled, LookupError)


IDLE_CONNECTIONS = 4  # kept open between requests: opening one costs more than a search


class Pages:
    """What every page reads through: the config, and read-only, time-limited connections
    (set up as the MCP tools' are, ``garage.db.runtime``) kept open between requests, since
    opening one (TCP, SCRAM) costs as much as the search a page shows. A connection that
    failed, or is not idle when its request ends, is closed rather than kept."""

    def __init__(self, config: GarageConfig, database_url: str | None = None):
        self.config = config
        self.database_url = database_url  # None: resolved from the config on first use
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._client: Any = None

    @property
    def url(self) -> str:
        if self.database_url is None:
            from garage.db import resolve_url

            self.database_url = resolve_url(self.config)
        return self.database_url

    def _open(self) -> Any:
        from garage.db import connect
        from garage.db.runtime import STATEMENT_TIMEOUT_MS

        conn = connect(self.url, autocommit=True)
        conn.execute("SET default_transaction_read_only = on")
        conn.execute(
            "SELECT set_config('statement_timeout', %s, false)", (str(STATEMENT_TIMEOUT_MS),)
        )
        return conn

    @contextmanager
    def reader(self) -> Iterator[Any]:
        """A read-only connection with a statement timeout, for one request."""
        from psycopg.pq import TransactionStatus

        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None or conn.closed or conn.broken:
            conn = self._open()
        kept = False
        try:
            yield conn
            if not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE:
                with self._lock:
                    if len(self._idle) < IDLE_CONNECTIONS:
                        self._idle.append(conn)
                        kept = True
        finally:
            if not kept:
                conn.close()

    @property
    def client(self) -> Any:
        """One inference client for every search's query embedding (its HTTP connections to
        the model server kept alive), set up as ``garage.search`` sets up its own."""
        with self._lock:
            if self._client is None:
                from garage.inference import EgressGuard, InferenceClient

                self._client = InferenceClient(
                    EgressGuard.from_config(self.config),
                    timeout=self.config.search.embed_timeout_seconds,
                    retries=1,
                    backoff=0.2,
                )
            return self._client

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            client, self._client = self._client, None
        for conn in idle:
            conn.close()
        if client is not None:
            client.close()


def _message(error: BaseException) -> str:
    if isinstance(error, QueryCanceled):
        return "the query took too long and was stopped; narrow it (fewer words, a filter)"
    return str(error)


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
            return _html(page(title, active, views.error_box(_message(error))), 400)

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
                    return Html(form + views.error_box(_message(error)))
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
            options = _ask_options(form)
            result = _answer(pages, question, agent, cancel, lambda _: None, options)
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
            options = _ask_options(form)
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
                form = views.facts_form(params, sources, classes, sorted(stats.by_prompt))
                if params.get("distilled", "").isdigit():
                    groups = distilled_facts(conn, ids=[int(params["distilled"])], members=200)
                    return Html(form + views.distilled_list(groups))
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
                + views.fact_stats_table(stats)
                + views.fact_list(listing, membership, params, offset, FACTS_PER_PAGE)
                + views.distilled_list(distilled)
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
                parts = [views.graph_form(params, labels)]
                if params.get("find"):
                    label = params.get("label")
                    found = find_vertices(
                        conn, params["find"], labels=(label,) if label else (), limit=30
                    )
                    parts.append(views.found_vertices(found, hops))
                if params.get("v"):
                    parts.append(views.neighbourhood_view(neighbourhood(conn, params["v"],
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

            with pages.reader() as conn:
                sources = list_sources(conn)
                health = {s.name: source_health(conn, s.name) for s in sources}
                stats = corpus_stats(conn)
            return views.sources_page(sources, health, stats)

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


def _ask_options(form: Mapping[str, str]) -> tuple[int, int]:
    """(excerpts, answer tokens) from the form, in the bounds rag_ask takes."""
    from garage.ask import ANSWER_TOKENS, DEFAULT_EXCERPTS, MAX_ANSWER_TOKENS, MAX_EXCERPTS

    try:
        limit = int(form.get("limit") or DEFAULT_EXCERPTS)
        tokens = int(form.get("tokens") or ANSWER_TOKENS)
    except ValueError:
        raise ValueError("excerpts and answer length are whole numbers") from None
    if not 1 <= limit <= MAX_EXCERPTS or not 16 <= tokens <= MAX_ANSWER_TOKENS:
        raise ValueError(
            f"excerpts: 1 to {MAX_EXCERPTS}; longest answer: 16 to {MAX_ANSWER_TOKENS} tokens"
        )
    return limit, tokens


def _answer(
    pages: Pages,
    question: str,
    agent: bool,
    cancel: threading.Event,
    emit: Callable[[dict[str, Any]], None],
    options: tuple[int, int],
) -> Html:
    """Answer ``question`` (rag_ask, or rag_agent), sending pieces and progress to ``emit``;
    the result as HTML."""
    from garage.ask import ask, chat_model

    if not question:
        raise ValueError("question: is empty")
    config = pages.config
    with chat_model(config) as model:
        if agent:
            from garage.ask.agent import Agent
            from garage.db.runtime import Runtime

            result = Agent.for_model(Runtime(config, pages.url), model).run(
                question,
                on_progress=lambda _done, _total, message: emit({"progress": message}),
                cancel=cancel,
            )
            return views.agent_result(result)
        with pages.reader() as conn:
            answered = ask(
                conn,
                config,
                question[:4000],
                limit=options[0],
                answer_tokens=options[1],
                model=model,
                on_text=lambda piece: emit({"text": piece}),
                on_progress=lambda _done, _total, message: emit({"progress": message}),
                cancel=cancel,
            )
        return views.ask_result(answered)


class AnswerStream:
    """A streamed answer as JSON lines: {"progress"}, {"text"} pieces as the model writes,
    then {"html"} (the whole result, escaped here) or {"error"}. The model runs in a thread;
    when the client disconnects, or the response cannot be sent, its cancel event is set and
    the generation stops."""

    def __init__(self, pages: Pages, question: str, agent: bool, options: tuple[int, int]):
        self.pages, self.question, self.agent, self.options = pages, question, agent, options
        self.cancel = threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        def emit(item: dict[str, Any] | None) -> None:
            if not self.cancel.is_set() or item is None:
                loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            try:
                html = _answer(
                    self.pages, self.question, self.agent, self.cancel, emit, self.options
                )
                emit({"html": str(html)})
            except EXPECTED as error:
                emit({"error": _message(error)})
            except Exception as error:  # the page says so; the log has the traceback
                log.exception("answering failed")
                emit({"error": f"answering failed: {type(error).__name__}"})
            finally:
                emit(None)

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    self.cancel.set()
                    queue.put_nowait(None)
                    return

        watcher = asyncio.ensure_future(watch())
        worker = loop.run_in_executor(None, work)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/x-ndjson; charset=utf-8")],
                }
            )
            while (item := await queue.get()) is not None:
                line = (json.dumps(item) + "\n").encode()
                await send({"type": "http.response.body", "body": line, "more_body": True})
            if not self.cancel.is_set():
                await send({"type": "http.response.body", "body": b""})
        except OSError:
            pass  # the client went away mid-send
        finally:
            self.cancel.set()
            watcher.cancel()
            # The thread returns soon after cancel (the generation is stopped); not awaited
            # past that, so a slow shutdown never holds the event loop.
            worker.add_done_callback(lambda _f: None)


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
