"""What a chat request asks of the model beyond its messages, as one record.

Every layer a chat request passes through (``LocalChatModel.stream`` and ``.complete``,
``InferenceClient.chat`` and ``.chat_stream``, ``dialects.chat_body``) takes these as keyword
arguments and hands them on whole, so an option is written here once rather than in every
signature on the way. A TypedDict rather than a dataclass: callers keep writing
``temperature=0.0``, and the type checker still checks each name and its type.

Where a request may go (``corpus_classes``, for the egress guard) and how long it may run
(``cancel``, ``time_limit``) are not in it: they are not sent to the server, and each is read
by the layer that enforces it.
"""

from __future__ import annotations

from typing import Any, TypedDict


class ChatOptions(TypedDict, total=False):
    json_schema: dict[str, Any] | None  # the reply must match it (a grammar on the server)
    json_mode: bool  # any JSON object, where no schema is given (Ollama's format: "json")
    temperature: float | None  # None: the server's default
    max_tokens: int | None
    top_logprobs: int | None  # each token's likeliest alternatives (OpenAI-compatible servers)
