"""How each local server spells a chat request and its reply (Ollama vs the OpenAI-compatible
LM Studio and llama-server)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Unpack

from garage.inference.options import ChatOptions

Provider = Literal["ollama", "lmstudio", "llama_server"]
Message = dict[str, str]


def chat_body(
    provider: Provider,
    model_id: str,
    messages: Sequence[Message],
    *,
    stream: bool,
    **options: Unpack[ChatOptions],
) -> tuple[str, dict[str, Any]]:
    """The route and body of a chat request in the provider's dialect. ``json_mode`` asks for
    any JSON object where no schema is given (Ollama ``format: "json"``, llama-server
    ``json_object``; LM Studio refuses ``json_object``, so it is told in a system message).
    ``top_logprobs`` asks an OpenAI-compatible server for each token's likeliest
    alternatives (Ollama is not asked: the caller then goes by the text alone)."""
    json_schema = options.get("json_schema")
    json_mode = options.get("json_mode", False)
    temperature = options.get("temperature")
    max_tokens = options.get("max_tokens")
    top_logprobs = options.get("top_logprobs")
    copied = [dict(m) for m in messages]
    if provider == "ollama":
        ollama_options: dict[str, Any] = {}
        if temperature is not None:
            ollama_options["temperature"] = temperature
        if max_tokens is not None:
            ollama_options["num_predict"] = max_tokens
        body: dict[str, Any] = {"model": model_id, "messages": copied, "stream": stream}
        if ollama_options:
            body["options"] = ollama_options
        if json_schema is not None:
            body["format"] = json_schema  # Ollama turns a schema into a grammar
        elif json_mode:
            body["format"] = "json"
        return "/api/chat", body
    if json_mode and json_schema is None and provider == "lmstudio":
        copied = _with_json_instruction(copied)
    body = {"model": model_id, "messages": copied, "stream": stream}
    if temperature is not None:
        body["temperature"] = temperature
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if top_logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = top_logprobs
    if json_schema is not None:
        # Both OpenAI-compatible servers constrain output to a JSON schema (llama-server turns
        # it into a grammar); LM Studio refuses "json_object" but takes "json_schema".
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "strict": True, "schema": json_schema},
        }
    elif json_mode and provider == "llama_server":
        body["response_format"] = {"type": "json_object"}
    return "/v1/chat/completions", body


def _with_json_instruction(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    instruction = "Reply with one JSON object only, no prose and no code fence."
    if messages and messages[0].get("role") == "system":
        first = dict(messages[0])
        first["content"] = f"{first['content']}\n\n{instruction}"
        return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def content_of(provider: Provider, data: dict[str, Any]) -> Any:
    if provider == "ollama":
        return (data.get("message") or {}).get("content")
    choices = data.get("choices") or [{}]
    return (choices[0].get("message") or {}).get("content")
