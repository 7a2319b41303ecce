"""One client for the local inference servers: Ollama, LM Studio and llama-server.

Built on httpx, with no ollama or openai SDK: each request is built here and sent only after
the egress guard approved its destination (``EgressGuard.check`` runs before the transport is
touched). The three dialects:

- **Ollama**: ``/api/embed`` and ``/api/chat``; JSON mode is ``format`` (a schema or "json"),
  and extraction runs at temperature 0.1, as LangExtract's own Ollama provider sends.
- **LM Studio**: the OpenAI-compatible ``/v1/embeddings`` and ``/v1/chat/completions``; JSON is
  ``response_format`` with a JSON schema (it refuses ``json_object``).
- **llama-server** (this port's counterpart of the app's llama_xpc provider): the same OpenAI
  routes, and ``response_format`` with a JSON schema, which it turns into a grammar; its
  ``/tokenize`` counts a prompt's tokens and ``/props`` tells a slot's context.

Replies can also be streamed (``chat_stream``: SSE, or NDJSON for Ollama) under a wall-clock
limit and a cancel flag; see ``garage.inference.stream``.

Connection failures are retried with backoff; a server that stays down, or a model it has not
loaded, is reported with what to do about it. An input longer than the model's context never
fails its batch: the batch is split until the culprit is alone, which is then cut down until it
fits and recorded as truncated.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from garage.inference.dialects import Message, Provider, chat_body, content_of
from garage.inference.egress import EgressGuard
from garage.inference.errors import (
    ContextExceeded,
    EgressRefused,
    InferenceError,
    ModelNotLoaded,
    ServerUnavailable,
)
from garage.inference.model_key import auth_headers, load_key
from garage.inference.stream import Delta, Watchdog, ndjson_deltas, sse_deltas

log = logging.getLogger(__name__)


EXTRACTION_TEMPERATURE = 0.1
_MAX_TRUNCATIONS = 8  # proportional cuts, each 20% shorter than the last
_BISECT_STEPS = 7  # the kept prefix is within 1/128 of the longest that fits


__all__ = [
    "ContextExceeded",
    "EgressRefused",
    "EmbedResult",
    "InferenceClient",
    "InferenceError",
    "ModelNotLoaded",
    "ServerUnavailable",
]


@dataclass(frozen=True)
class EmbedResult:
    vectors: list[list[float]]
    truncated: list[bool]  # per input: cut down to fit the model's context


_HOW_TO_START = {
    "ollama": "start it with `ollama serve`",
    "lmstudio": "start LM Studio's server (`lms server start`)",
    "llama_server": "start it with `bash scripts/llama start` or your own llama-server",
}
_HOW_TO_LOAD = {
    "ollama": "pull it with `ollama pull {model}`",
    "lmstudio": "load it with `lms load {model}`",
    "llama_server": "start llama-server with that model (-m FILE --alias {model})",
}


class InferenceClient:
    def __init__(
        self,
        guard: EgressGuard,
        *,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ):
        if not isinstance(guard, EgressGuard):
            raise TypeError("InferenceClient needs an EgressGuard: no request bypasses it")
        self.guard = guard
        self.retries = retries
        self.backoff = backoff
        self._llama_key = load_key()  # see garage.inference.model_key
        # No proxies from the environment: a request for 127.0.0.1 must not take a detour.
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=5.0), transport=transport, trust_env=False
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> InferenceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- embeddings -------------------------------------------------------------------------

    def embed(
        self,
        provider: Provider,
        host: str,
        model_id: str,
        texts: Sequence[str],
        *,
        corpus_classes: Iterable[str] = (),
    ) -> EmbedResult:
        """One vector per text, in order. Inputs over the model's context are truncated."""
        if not texts:
            return EmbedResult([], [])
        for i, text in enumerate(texts):
            if not text.strip():
                raise ValueError(f"input {i} is empty: there is nothing to embed")
        classes = frozenset(corpus_classes)
        self.guard.check(host, corpus_classes=classes, model_id=model_id)
        return self._embed_fitting(provider, host, model_id, list(texts), classes)

    def _embed_fitting(
        self, provider: Provider, host: str, model_id: str, texts: list[str], classes: frozenset
    ) -> EmbedResult:
        try:
            vectors = self._embed_request(provider, host, model_id, texts, classes)
            return EmbedResult(vectors, [False] * len(texts))
        except ContextExceeded as error:
            if len(texts) > 1:
                # Split until the culprit is alone: log2(batch) extra requests, not one per input.
                half = len(texts) // 2
                left = self._embed_fitting(provider, host, model_id, texts[:half], classes)
                right = self._embed_fitting(provider, host, model_id, texts[half:], classes)
                return EmbedResult(left.vectors + right.vectors, left.truncated + right.truncated)
            return EmbedResult(
                [self._embed_truncated(provider, host, model_id, texts[0], classes, error)], [True]
            )

    def _embed_truncated(
        self,
        provider: Provider,
        host: str,
        model_id: str,
        text: str,
        classes: frozenset,
        error: ContextExceeded,
    ) -> list[float]:
        """The vector of the longest prefix of ``text`` that fits the context (near enough)."""
        if error.n_ctx and error.n_tokens and error.n_tokens > error.n_ctx:
            # llama-server says how far over it is: cut in proportion, with a margin.
            keep = int(len(text) * error.n_ctx / error.n_tokens * 0.9)
            for _ in range(_MAX_TRUNCATIONS):
                try:
                    [vector] = self._embed_request(provider, host, model_id, [text[:keep]], classes)
                    return vector
                except ContextExceeded:
                    keep = int(keep * 0.8)
        else:
            # Ollama and LM Studio only say "too long": bisect on the length, at most
            # _BISECT_STEPS requests, keeping the longest prefix that fit.
            fits, too_long, best = 0, len(text), None
            for _ in range(_BISECT_STEPS):
                keep = (fits + too_long) // 2
                if keep <= fits:
                    break
                try:
                    [vector] = self._embed_request(provider, host, model_id, [text[:keep]], classes)
                    fits, best = keep, vector
                except ContextExceeded:
                    too_long = keep
            if best is not None:
                return best
        raise InferenceError(f"{model_id}: an input still exceeds the context after truncation")

    def _embed_request(
        self, provider: Provider, host: str, model_id: str, texts: list[str], classes: frozenset
    ) -> list[list[float]]:
        if provider == "ollama":
            # truncate=false: Ollama would otherwise cut silently, and a cut must be recorded.
            body = {"model": model_id, "input": texts, "truncate": False}
            data = self._post(provider, host, "/api/embed", body, model_id, classes)
            vectors = data.get("embeddings")
        else:
            body = {"model": model_id, "input": texts, "encoding_format": "float"}
            data = self._post(provider, host, "/v1/embeddings", body, model_id, classes)
            items = data.get("data")
            if isinstance(items, list) and all(isinstance(i, dict) for i in items):
                # OpenAI's contract orders by "index"; do not trust the array order.
                items = sorted(items, key=lambda item: item.get("index", 0))
                vectors = [item.get("embedding") for item in items]
            else:
                vectors = None
        if not isinstance(vectors, list) or not all(isinstance(v, list) for v in vectors):
            raise InferenceError(f"{provider} at {host} answered /embed without vectors")
        if len(vectors) != len(texts):
            raise InferenceError(
                f"{provider} at {host} returned {len(vectors)} vectors for {len(texts)} inputs "
                f"(model {model_id})"
            )
        return vectors

    # -- chat -------------------------------------------------------------------------------

    def chat(
        self,
        provider: Provider,
        host: str,
        model_id: str,
        messages: Sequence[Message],
        *,
        corpus_classes: Iterable[str] = (),
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """The assistant's reply text. With a schema, the reply is JSON meant to match it;
        ``json_mode`` asks for any JSON object (Ollama's ``format: "json"``)."""
        classes = frozenset(corpus_classes)
        self.guard.check(host, corpus_classes=classes, model_id=model_id)
        path, body = chat_body(
            provider,
            model_id,
            messages,
            json_schema,
            temperature,
            max_tokens,
            stream=False,
            json_mode=json_mode,
        )
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
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        temperature: float | None = None,
        max_tokens: int | None = None,
        time_limit: float | None = None,
        cancel: threading.Event | None = None,
        top_logprobs: int | None = None,
    ) -> Generator[Delta, None, None]:
        """The reply as the server writes it (SSE, or NDJSON for Ollama), piece by piece.

        Stops with GenerationStopped, its connection shut so the server stops too, when
        ``time_limit`` seconds have passed or ``cancel`` is set. A server that ignores
        ``stream`` and answers with one JSON object is read as one piece.
        """
        classes = frozenset(corpus_classes)
        self.guard.check(host, corpus_classes=classes, model_id=model_id)
        path, body = chat_body(
            provider,
            model_id,
            messages,
            json_schema,
            temperature,
            max_tokens,
            stream=True,
            json_mode=json_mode,
            top_logprobs=top_logprobs,
        )
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
                    raise ServerUnavailable(
                        f"no {provider} server answering at {host} ({type(error).__name__}); "
                        f"{_HOW_TO_START[provider]}"
                    ) from None
            except httpx.TimeoutException:
                raise ServerUnavailable(
                    f"{provider} at {host} did not answer {path} in time"
                ) from None
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

    def models(self, provider: Provider, host: str) -> list[str]:
        """The model ids the server offers (Ollama: pulled; OpenAI-style: loaded)."""
        self.guard.check(host)
        path = "/api/tags" if provider == "ollama" else "/v1/models"
        data = self._request(provider, host, "GET", path, None, "")
        if provider == "ollama":
            return [m.get("name", "") for m in data.get("models", [])]
        return [m.get("id", "") for m in data.get("data", [])]

    # -- transport --------------------------------------------------------------------------

    def _post(
        self,
        provider: Provider,
        host: str,
        path: str,
        body: dict[str, Any],
        model_id: str,
        classes: frozenset,
    ) -> dict[str, Any]:
        # Checked again here, next to the send, so no path can reach the transport unchecked.
        self.guard.check(host, corpus_classes=classes, model_id=model_id)
        return self._request(provider, host, "POST", path, body, model_id)

    def _request(
        self,
        provider: Provider,
        host: str,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        model_id: str,
    ) -> dict[str, Any]:
        url = host.rstrip("/") + path
        headers = auth_headers(provider, host, self._llama_key)
        attempt = 0
        while True:
            try:
                response = self._http.request(method, url, json=body, headers=headers)
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ConnectTimeout) as error:
                if attempt < self.retries:
                    time.sleep(self.backoff * 2**attempt)
                    attempt += 1
                    continue
                raise ServerUnavailable(
                    f"no {provider} server answering at {host} ({type(error).__name__}); "
                    f"{_HOW_TO_START[provider]}"
                ) from None
            except httpx.TimeoutException:
                raise ServerUnavailable(
                    f"{provider} at {host} did not answer {path} in time"
                ) from None
            if response.status_code == 503 and attempt < self.retries:
                # llama-server answers 503 while it loads its model.
                time.sleep(self.backoff * 2**attempt)
                attempt += 1
                continue
            return self._decode(provider, host, path, response, model_id)

    def _decode(
        self, provider: Provider, host: str, path: str, response: httpx.Response, model_id: str
    ) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.is_success and isinstance(data, dict):
            return data
        message, kind, extra = _error_of(data, response)
        lowered = message.lower()
        if (
            kind == "exceed_context_size_error"
            or "context" in lowered
            and ("exceed" in lowered or "too long" in lowered or "larger than" in lowered)
        ):
            raise ContextExceeded(
                f"{model_id}: {message}", extra.get("n_ctx"), extra.get("n_prompt_tokens")
            )
        if response.status_code == 404 or "not found" in lowered or "not loaded" in lowered:
            if "model" in lowered or response.status_code == 404:
                how = _HOW_TO_LOAD[provider].format(model=model_id)
                raise ModelNotLoaded(
                    f"model {model_id!r} is not available on {provider} at {host}: {message}; {how}"
                )
        if response.status_code == 503:
            raise ServerUnavailable(f"{provider} at {host} is busy or loading: {message}")
        raise InferenceError(
            f"{provider} at {host} refused {path} (HTTP {response.status_code}): {message}"
        )


def _error_of(data: Any, response: httpx.Response) -> tuple[str, str, dict[str, Any]]:
    """(message, type, the error object) from the three servers' error shapes."""
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict):
            return str(error.get("message", error)), str(error.get("type", "")), error
        if isinstance(error, str):
            return error, "", {}
    return (response.text[:300] or response.reason_phrase), "", {}
