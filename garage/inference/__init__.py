"""Local inference: the egress guard, one client for Ollama / LM Studio / llama-server, and the
chat model built on it. Nothing here talks to a cloud API."""

from garage.inference.chat import LocalChatModel
from garage.inference.client import EmbedResult, InferenceClient
from garage.inference.egress import EgressGuard, is_cloud_model, is_loopback
from garage.inference.errors import (
    ContextExceeded,
    EgressRefused,
    InferenceError,
    ModelNotLoaded,
    ServerUnavailable,
)
from garage.inference.options import ChatOptions

__all__ = [
    "ChatOptions",
    "ContextExceeded",
    "EgressGuard",
    "EgressRefused",
    "EmbedResult",
    "InferenceClient",
    "InferenceError",
    "LocalChatModel",
    "ModelNotLoaded",
    "ServerUnavailable",
    "is_cloud_model",
    "is_loopback",
]
