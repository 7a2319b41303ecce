"""LangExtract's model, played by Garage's own chat client.

Only LangExtract's local part is used (prompting, chunking, parsing, alignment): this
``BaseLanguageModel`` is handed to ``langextract.extract`` as a ready model object, so its
provider registry — which routes ``gemini*``/``gpt-*`` ids to cloud APIs — is never consulted.
Each prompt is posted through the inference client, whose egress guard checks the destination
with the document's corpus class before any connection (a communication goes only to
loopback), and refuses cloud model ids.

How each server is asked for JSON:
- **llama-server**: a JSON schema in ``response_format`` (a grammar), at temperature 0. A 135M
  model loops in plain JSON mode until ``max_tokens`` and the chunk is lost; under a schema its
  reply parses. Greedy, because the grammar already keeps the reply well-formed, and the same
  document must give the same facts whichever door asked (at 0.1, one prompt sent six times
  to SmolLM2 came back four different ways).
- **Ollama**: JSON mode (``format: "json"``) at temperature 0.1, as LangExtract's own Ollama
  provider sent; GPT-OSS models get a JSON-only system instruction instead, because their
  reasoning channel does not survive JSON mode.
- **LM Studio**: ``response_format`` with the JSON schema; it refuses ``json_object``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from langextract.core.base_model import BaseLanguageModel
from langextract.core.types import ScoredOutput

from garage.inference.chat import LocalChatModel
from garage.inference.client import EXTRACTION_TEMPERATURE, Message

# Bounds that keep a small model's reply finite under the grammar.
MAX_EXTRACTIONS = 16
MAX_EXTRACTION_CHARS = 300
# Attributes are short labels (a name, a kind, a date); a long one is a model rambling, and a
# reply cut off at max_tokens does not parse at all.
MAX_ATTRIBUTE_CHARS = 60

_JSON_ONLY = (
    "Reply with one JSON object only: no reasoning, no prose and no code fence. Its key "
    '"extractions" holds the list of extractions, as in the examples.'
)


def extraction_schema(
    classes: Sequence[str],
    attributes: Mapping[str, Sequence[str]] | None = None,
    *,
    max_items: int = MAX_EXTRACTIONS,
) -> dict[str, Any]:
    """The JSON schema of LangExtract's output envelope for these classes:
    ``{"extractions": [{"<class>": "<quoted text>", "<class>_attributes": {...}}, ...]}``.

    Each item names exactly one of the prompt's classes; attributes, where the examples show
    some, are the keys they use. Lengths and counts are bounded so the reply always ends."""
    attributes = attributes or {}
    items = []
    for name in classes:
        properties: dict[str, Any] = {
            name: {"type": "string", "minLength": 1, "maxLength": MAX_EXTRACTION_CHARS}
        }
        keys = list(attributes.get(name, ()))
        if keys:
            properties[f"{name}_attributes"] = {
                "type": "object",
                "properties": {
                    key: {"type": "string", "maxLength": MAX_ATTRIBUTE_CHARS} for key in keys
                },
                "additionalProperties": False,
            }
        items.append(
            {
                "type": "object",
                "properties": properties,
                "required": [name],
                "additionalProperties": False,
            }
        )
    item = items[0] if len(items) == 1 else {"anyOf": items}
    return {
        "type": "object",
        "properties": {"extractions": {"type": "array", "items": item, "maxItems": max_items}},
        "required": ["extractions"],
        "additionalProperties": False,
    }


def is_gpt_oss(model_id: str) -> bool:
    return "gpt-oss" in model_id.lower()


class GarageLanguageModel(BaseLanguageModel):  # type: ignore[misc]
    """Posts every prompt LangExtract builds to the configured local chat model."""

    def __init__(
        self,
        chat: LocalChatModel,
        *,
        corpus_class: str,
        schema: dict[str, Any],
        max_tokens: int = 1024,
        cancel: threading.Event | None = None,
    ):
        super().__init__()
        self.chat = chat
        # Set by a stop request: the reply in flight is cut off (and the server's work on it
        # stopped) instead of running to its end, which on a long mail thread is minutes.
        self.cancel = cancel
        self.corpus_class = corpus_class
        self.schema_dict = schema
        self.max_tokens = max_tokens
        self.calls = 0
        self.unparsed = 0  # replies that are not JSON (cut off at max_tokens, or prose)
        # Our servers return bare JSON (a grammar, JSON mode or a firm instruction), so the
        # resolver should not look for a ```json fence.
        self.set_fence_output(False)

    @property
    def temperature(self) -> float:
        """0 under a grammar (llama-server, LM Studio); Ollama's JSON mode keeps the 0.1 that
        LangExtract's own Ollama provider sent."""
        if self.chat.provider in ("llama_server", "lmstudio"):
            return 0.0
        return EXTRACTION_TEMPERATURE

    def _ask(self, prompt: str) -> str:
        messages: list[Message] = [{"role": "user", "content": prompt}]
        provider = self.chat.provider
        json_schema: dict[str, Any] | None = None
        json_mode = False
        if provider == "llama_server":
            json_schema = self.schema_dict
        elif provider == "lmstudio":
            json_schema = self.schema_dict  # response_format json_schema (never json_object)
        elif is_gpt_oss(self.chat.model):
            messages = [{"role": "system", "content": _JSON_ONLY}, *messages]
        else:
            json_mode = True
        self.calls += 1
        reply = self.chat.complete(
            messages,
            corpus_classes={self.corpus_class},
            json_schema=json_schema,
            json_mode=json_mode,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            cancel=self.cancel,
        )
        # LangExtract drops such a chunk with a log line; counting it here lets the report
        # say how much text went unread, rather than showing it as "no facts".
        try:
            json.loads(reply)
        except ValueError:
            self.unparsed += 1
        return reply

    def infer(
        self, batch_prompts: Sequence[str], **kwargs: Any
    ) -> Iterator[Sequence[ScoredOutput]]:
        # One request at a time: a local server runs one generation per slot anyway, and a
        # sequential run is what the progress bar and the timings describe.
        for prompt in batch_prompts:
            yield [ScoredOutput(score=1.0, output=self._ask(prompt))]
