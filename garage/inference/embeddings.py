"""Embedding requests: one vector per text, in order, from Ollama's ``/api/embed`` or the
OpenAI-compatible ``/v1/embeddings`` (LM Studio, llama-server).

An input longer than the model's context never fails its batch: the batch is split until the
culprit is alone, which is then cut down until it fits and recorded as truncated.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from garage.inference.dialects import Provider
from garage.inference.errors import ContextExceeded, InferenceError
from garage.inference.transport import Transport

_MAX_TRUNCATIONS = 8  # proportional cuts, each 20% shorter than the last
_BISECT_STEPS = 7  # the kept prefix is within 1/128 of the longest that fits


@dataclass(frozen=True)
class EmbedResult:
    vectors: list[list[float]]
    truncated: list[bool]  # per input: cut down to fit the model's context


class EmbeddingRequests(Transport):
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
