"""How a request reaches a local inference server: one httpx client, the egress guard checked
next to every send, retries with backoff, and each server's errors read into Garage's own.

Built on httpx, with no ollama or openai SDK: each request is built by the caller and sent only
after the egress guard approved its destination (``EgressGuard.check`` runs before the
transport is touched). Connection failures are retried with backoff; a server that stays down,
or a model it has not loaded, is reported with what to do about it.
"""

from __future__ import annotations

import time
from typing import Any, Self

import httpx

from garage.inference.dialects import Provider
from garage.inference.egress import EgressGuard
from garage.inference.errors import (
    ContextExceeded,
    InferenceError,
    ModelNotLoaded,
    ServerUnavailable,
)
from garage.inference.model_key import auth_headers, load_key

HOW_TO_START = {
    "ollama": "start it with `ollama serve`",
    "lmstudio": "start LM Studio's server (`lms server start`)",
    "llama_server": "start it with `bash scripts/llama start` or your own llama-server",
}
HOW_TO_LOAD = {
    "ollama": "pull it with `ollama pull {model}`",
    "lmstudio": "load it with `lms load {model}`",
    "llama_server": "start llama-server with that model (-m FILE --alias {model})",
}


class Transport:
    """The connection side of InferenceClient; the requests themselves are in
    garage.inference.embeddings and garage.inference.chat_requests."""

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def models(self, provider: Provider, host: str) -> list[str]:
        """The model ids the server offers (Ollama: pulled; OpenAI-style: loaded)."""
        self.guard.check(host)
        path = "/api/tags" if provider == "ollama" else "/v1/models"
        data = self._request(provider, host, "GET", path, None, "")
        if provider == "ollama":
            return [m.get("name", "") for m in data.get("models", [])]
        return [m.get("id", "") for m in data.get("data", [])]

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
                raise not_answering(provider, host, error) from None
            except httpx.TimeoutException:
                raise too_slow(provider, host, path) from None
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
                how = HOW_TO_LOAD[provider].format(model=model_id)
                raise ModelNotLoaded(
                    f"model {model_id!r} is not available on {provider} at {host}: {message}; {how}"
                )
        if response.status_code == 503:
            raise ServerUnavailable(f"{provider} at {host} is busy or loading: {message}")
        raise InferenceError(
            f"{provider} at {host} refused {path} (HTTP {response.status_code}): {message}"
        )


def not_answering(provider: str, host: str, error: Exception) -> ServerUnavailable:
    """No server accepted the connection: say which, and how to start one."""
    return ServerUnavailable(
        f"no {provider} server answering at {host} ({type(error).__name__}); "
        f"{HOW_TO_START[provider]}"
    )


def too_slow(provider: str, host: str, path: str) -> ServerUnavailable:
    return ServerUnavailable(f"{provider} at {host} did not answer {path} in time")


def _error_of(data: Any, response: httpx.Response) -> tuple[str, str, dict[str, Any]]:
    """(message, type, the error object) from the three servers' error shapes."""
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict):
            return str(error.get("message", error)), str(error.get("type", "")), error
        if isinstance(error, str):
            return error, "", {}
    return (response.text[:300] or response.reason_phrase), "", {}
