"""Ask on the pages: the form's options, the answer (rag_ask or rag_agent) rendered, and its
stream to ``ask.js`` as JSON lines, cancelled when the browser goes away."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from garage.pages import views
from garage.pages.html import Html
from garage.pages.reading import EXPECTED, Pages, shown_error

log = logging.getLogger("garage.pages")


def ask_options(form: Mapping[str, str]) -> tuple[int, int]:
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


def answer(
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
                html = answer(
                    self.pages, self.question, self.agent, self.cancel, emit, self.options
                )
                emit({"html": str(html)})
            except EXPECTED as error:
                emit({"error": shown_error(error)})
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
