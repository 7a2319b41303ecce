"""Chat requests: a whole reply (``chat``), or the reply as the server writes it
(``chat_stream``: SSE, or NDJSON for Ollama) under a wall-clock limit and a cancel flag (see
garage.inference.stream); and what the model's server says of a prompt's tokens and of its
context.

How each server spells the request is garage.inference.dialects': Ollama's ``/api/chat``, whose
JSON mode is ``format`` (a schema or "json"); LM Studio's OpenAI-compatible
``/v1/chat/completions``, whose JSON is ``response_format`` with a JSON schema (it refuses
``json_object``); llama-server's same routes, turning the schema into a grammar, with
``/tokenize`` to count a prompt's tokens and ``/props`` to tell a slot's context.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterable, Iterator, Sequence
from typing import Unpack

import httpx

from garage.inference.dialects import Message, Provider, chat_body, content_of
from garage.inference.errors import EgressRefused, InferenceError, ServerUnavailable
from garage.inference.model_key import auth_headers
from garage.inference.options import ChatOptions
from garage.inference.stream import Delta, Watchdog, ndjson_deltas, sse_deltas
from garage.inference.transport import Transport, not_answering, too_slow


class ChatRequests(Transport):
    def chat(
        self,
        provider: Provider,
        host: str,
        model_id: str,
        messages: Sequence[Message],
        *,
        corpus_classes: Iterable[str] = (),
        **options: Unpack[ChatOptions],
    ) -> str:
        """The assistant's reply text. With a schema, the reply is JSON meant to match it;
        ``json_mode`` asks for any JSON object (Ollama's ``format: "json"``)."""
        classes = frozenset(corpus_classes)
        self.guard.check(host, corpus_classes=classes, model_id=model_id)
        path, body = chat_body(provider, model_id, messages, stream=False, **options)
        data = self._post(provider, host, path, body, model_id, classes)
        content = content_of(provider, data)
        if not isinstance(content, str):
            raise InferenceError(f"{provider} at {host} answered without a message")
        return content

    def chat_stream(
        self,
        provider: Provider,
        host: str,
        model_id: str,
        messages: Sequence[Message],
        *,
        corpus_classes: Iterable[str] = (),
        time_limit: float | None = None,
        cancel: threading.Event | None = None,
        **options: Unpack[ChatOptions],
    ) -> Generator[Delta, None, None]:
        """The reply as the server writes it (SSE, or NDJSON for Ollama), piece by piece.

        Stops with GenerationStopped, its connection shut so the server stops too, when
        ``time_limit`` seconds have passed or ``cancel`` is set. A server that ignores
        ``stream`` and answers with one JSON object is read as one piece.
        """
        classes = frozenset(corpus_classes)
        self.guard.check(host, corpus_classes=classes, model_id=model_id)
        path, body = chat_body(provider, model_id, messages, stream=True, **options)
        url = host.rstrip("/") + path
        # Nothing arrives while the server reads a long prompt: the read timeout must not cut
        # that short when the watchdog already bounds the whole generation.
        timeout = self._http.timeout if time_limit is None else httpx.Timeout(None, connect=5.0)
        headers = auth_headers(provider, host, self._llama_key)
        attempt = 0
        while True:
            # Checked again next to the send, so no path reaches the transport unchecked.
            self.guard.check(host, corpus_classes=classes, model_id=model_id)
            try:
                with self._http.stream(
                    "POST", url, json=body, headers=headers, timeout=timeout
                ) as response:
                    if response.status_code == 503 and attempt < self.retries:
                        response.read()
                    else:
                        yield from self._deltas(provider, host, path, response, model_id,
                                                time_limit, cancel)  # fmt: skip
                        return
            except (httpx.ConnectError, httpx.ConnectTimeout) as error:
                if attempt >= self.retries:
                    raise not_answering(provider, host, error) from None
            except httpx.TimeoutException:
                raise too_slow(provider, host, path) from None
            time.sleep(self.backoff * 2**attempt)
            attempt += 1

    def _deltas(
        self,
        provider: Provider,
        host: str,
        path: str,
        response: httpx.Response,
        model_id: str,
        time_limit: float | None,
        cancel: threading.Event | None,
    ) -> Iterator[Delta]:
        kind = response.headers.get("content-type", "")
        if not response.is_success or kind.startswith("application/json"):
            response.read()
            data = self._decode(provider, host, path, response, model_id)
            content = content_of(provider, data)
            if not isinstance(content, str):
                raise InferenceError(f"{provider} at {host} answered without a message")
            yield Delta(content, "stop")
            return
        parse = ndjson_deltas if provider == "ollama" else sse_deltas
        received: list[str] = []
        with Watchdog(response, time_limit, cancel) as watchdog:
            try:
                for delta in parse(response.iter_lines()):
                    if watchdog.check():
                        break
                    received.append(delta.text)
                    yield delta
            except (
                httpx.ReadError,
                httpx.ReadTimeout,
                httpx.RemoteProtocolError,
                httpx.StreamError,
            ) as error:
                if not watchdog.check():
                    raise ServerUnavailable(
                        f"{provider} at {host} broke off the reply ({type(error).__name__})"
                    ) from None
            if watchdog.check():
                # Leaving the with-block closes the response; the socket is already shut.
                raise watchdog.stopped("".join(received))

    def tokens(
        self,
        provider: Provider,
        host: str,
        model_id: str,
        text: str,
        *,
        corpus_classes: Iterable[str] = (),
    ) -> int | None:
        """How many tokens ``text`` is for the model: llama-server's /tokenize counts them;
        Ollama and LM Studio have no such route (None: the caller estimates)."""
        if provider != "llama_server":
            return None
        classes = frozenset(corpus_classes)
        try:
            data = self._post(provider, host, "/tokenize", {"content": text}, model_id, classes)
        except EgressRefused:
            raise
        except InferenceError:
            return None  # a server without the route (a proxy, an older build): estimate
        tokens = data.get("tokens")
        return len(tokens) if isinstance(tokens, list) else None

    def context_tokens(self, provider: Provider, host: str) -> int | None:
        """The context one request may fill, when the server says (llama-server's /props:
        the context of one slot); None when it does not."""
        if provider != "llama_server":
            return None
        self.guard.check(host)
        try:
            data = self._request(provider, host, "GET", "/props", None, "")
        except InferenceError:
            return None
        settings = data.get("default_generation_settings") or {}
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        return n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None
