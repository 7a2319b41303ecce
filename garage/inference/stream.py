"""Streamed chat replies: the servers' streaming formats, a wall-clock limit and cancellation.

- OpenAI-compatible servers (llama-server, LM Studio) stream Server-Sent Events: ``data: {json}``
  lines whose ``choices[0].delta.content`` is the next piece of text, ended by ``data: [DONE]``.
- Ollama streams NDJSON: one ``{"message": {"content": ...}, "done": false}`` object per line,
  the last with ``"done": true``.

A generation that is stopped (its time is up, or the caller cancelled it) must not keep the
server busy: llama-server goes on with a request whose client merely stopped reading, and the
next request waits behind it. So a stop shuts the connection's socket down, from a watchdog
thread, which wakes a read blocked while the server is still processing the prompt and tells
the server the client is gone, which ends the generation and frees its slot.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from garage.inference.errors import InferenceError

StopReason = Literal["time_limit", "cancelled"]


class GenerationStopped(InferenceError):
    """A generation ended early by its wall-clock limit or by cancellation; ``partial`` holds
    the text received until then."""

    def __init__(self, message: str, reason: StopReason, partial: str = ""):
        super().__init__(message)
        self.reason = reason
        self.partial = partial


@dataclass(frozen=True)
class Delta:
    text: str
    finish_reason: str | None = None  # "stop", "length", … on the last piece
    # When asked for (``top_logprobs``): per token of this piece, the server's likeliest
    # tokens at that position and their log-probabilities.
    alternatives: tuple[dict[str, float], ...] = ()


def sse_deltas(lines: Iterator[str]) -> Iterator[Delta]:
    """The text pieces of an OpenAI-style event stream."""
    for line in lines:
        if not line.startswith("data:"):
            if line.startswith("error:"):  # llama-server names a failure mid-stream this way
                raise InferenceError(f"the server stopped the stream: {line[6:].strip()}")
            continue  # comments, event names, keep-alives
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        event = _json_object(payload)
        if "error" in event:
            raise InferenceError(f"the server stopped the stream: {_message(event['error'])}")
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            text = delta.get("content") or ""
            finish = choice.get("finish_reason")
            if text or finish:
                yield Delta(text, finish, _alternatives(choice.get("logprobs")))


def _alternatives(logprobs: Any) -> tuple[dict[str, float], ...]:
    """OpenAI's ``logprobs.content[].top_logprobs`` as one {token: logprob} per token."""
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get("content"), list):
        return ()
    out: list[dict[str, float]] = []
    for position in logprobs["content"]:
        top = position.get("top_logprobs") if isinstance(position, dict) else None
        if not isinstance(top, list):
            continue
        out.append(
            {
                str(t["token"]): float(t["logprob"])
                for t in top
                if isinstance(t, dict)
                and "token" in t
                and isinstance(t.get("logprob"), int | float)
            }
        )
    return tuple(out)


def ndjson_deltas(lines: Iterator[str]) -> Iterator[Delta]:
    """The text pieces of an Ollama NDJSON stream."""
    for line in lines:
        if not line.strip():
            continue
        event = _json_object(line)
        if "error" in event:
            raise InferenceError(f"the server stopped the stream: {_message(event['error'])}")
        text = (event.get("message") or {}).get("content") or ""
        done = bool(event.get("done"))
        if text or done:
            yield Delta(text, event.get("done_reason", "stop") if done else None)
        if done:
            return


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        shown = text[:200]
        raise InferenceError(f"the server streamed a line that is not JSON: {shown!r}") from None
    if not isinstance(value, dict):
        raise InferenceError(f"the server streamed {text[:200]!r}, not a JSON object")
    return value


def _message(error: Any) -> str:
    return str(error.get("message", error)) if isinstance(error, dict) else str(error)


class Watchdog:
    """Stops a streamed response when its time is up or ``cancel`` is set."""

    POLL_SECONDS = 0.1

    def __init__(
        self,
        response: httpx.Response,
        time_limit: float | None,
        cancel: threading.Event | None,
    ):
        self.response = response
        self.deadline = None if time_limit is None else time.monotonic() + time_limit
        self.time_limit = time_limit
        self.cancel = cancel
        self.fired: StopReason | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="generation-watchdog", daemon=True)

    def __enter__(self) -> Watchdog:
        if self.deadline is not None or self.cancel is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()

    def check(self) -> StopReason | None:
        """Why the stream must stop now, if it must (also for transports with no socket)."""
        if self.fired is None:
            if self.cancel is not None and self.cancel.is_set():
                self.fired = "cancelled"
            elif self.deadline is not None and time.monotonic() >= self.deadline:
                self.fired = "time_limit"
        return self.fired

    def _watch(self) -> None:
        while not self._done.wait(self.POLL_SECONDS):
            if self.check() is not None:
                self._abort()
                return

    def _abort(self) -> None:
        stream = self.response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            # shutdown, not close: it wakes the reader blocked in recv on the other thread, and
            # the server sees the connection end.
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stopped(self, partial: str) -> GenerationStopped:
        if self.fired == "cancelled":
            return GenerationStopped("the generation was cancelled", "cancelled", partial)
        return GenerationStopped(
            f"the generation was stopped at its time limit ({self.time_limit:g} s)",
            "time_limit",
            partial,
        )
