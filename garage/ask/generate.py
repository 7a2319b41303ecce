"""rag_generate: the local chat model's reply to a raw prompt, nothing from the index."""

from __future__ import annotations

from garage.ask.types import ANSWER_TOKENS, GenerateResult
from garage.inference import LocalChatModel
from garage.inference.client import Message


def generate(
    model: LocalChatModel,
    prompt: str,
    *,
    system: str | None = None,
    max_tokens: int = ANSWER_TOKENS,
    temperature: float | None = None,
) -> GenerateResult:
    """The local chat model's reply to a raw prompt: no retrieval, nothing from the index."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("prompt: is empty")
    messages: list[Message] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": prompt})
    text = model.complete(messages, temperature=temperature, max_tokens=max_tokens)
    return GenerateResult(text.strip(), model.model)
