"""What can go wrong talking to a model server; every message says what to do about it."""

from __future__ import annotations


class InferenceError(Exception):
    """A model server could not do what was asked."""


class EgressRefused(InferenceError):
    """The egress guard refused a request before any connection was attempted."""


class ServerUnavailable(InferenceError):
    """No server answers at the host, or it stayed busy."""


class ModelNotLoaded(InferenceError):
    """The server answers but does not have the model."""


class ContextExceeded(InferenceError):
    """An input is longer than the model's context (the client truncates and retries)."""

    def __init__(self, message: str, n_ctx: int | None = None, n_tokens: int | None = None):
        super().__init__(message)
        self.n_ctx = n_ctx
        self.n_tokens = n_tokens
