"""LangExtract's model, played by Garage's own chat client.

Only LangExtract's local part is used (prompting, chunking, parsing, alignment): this
``BaseLanguageModel`` is handed to ``langextract.extract`` as a ready model object, so its
provider registry — which routes ``gemini*``/``gpt-*`` ids to cloud APIs — is never consulted.
Each prompt is posted through the inference client, whose egress guard checks the destination
with the document's corpus class before any connection (a communication goes only to
loopback), and refuses cloud model ids.

How each server is asked for JSON:
- **llama-server**: a JSON schema in ``response_format`` (a grammar). A 135M model loops in
  plain JSON mode until ``max_tokens`` and the chunk is lost; under a schema its reply parses.
- **Ollama**: JSON mode (``format: "json"``) at temperature 0.1, as LangExtract's own Ollama
  provider sent; GPT-OSS models get a JSON-only system instruction instead, because their
  reasoning channel does not survive JSON mode.
- **LM Studio**: ``response_format`` with the JSON schema; it refuses ``json_object``.

How a prompt is sent (``Framing``): LangExtract renders one text per chunk — instructions,
examples, then the chunk. Garage sends the same content as chat turns: the instructions as the
system message, each example as a user turn (its text) and an assistant turn (its extractions
as one line of JSON), and the chunk as the last user message. Everything before the chunk is
then byte-identical in every request of a prompt, so llama-server reuses the prefix it has
cached (``cache_prompt`` is on by default, and a slot is chosen by prompt similarity) and reads
only the chunk; and compact examples teach a compact reply, whose tokens are most of what a
request costs on a local model.

A reply cut off at ``max_tokens`` is not valid JSON, and LangExtract drops a reply that does
not parse — the whole chunk's extractions. Here the extractions a cut reply completed are
kept (its envelope is closed behind them) and the reply is counted as cut; a reply with
nothing readable is counted as unparsed.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langextract.core.base_model import BaseLanguageModel
from langextract.core.types import ScoredOutput

from garage.inference.chat import LocalChatModel
from garage.inference.client import EXTRACTION_TEMPERATURE, Message

log = logging.getLogger(__name__)

# Bounds that keep a small model's reply finite under the grammar.
MAX_EXTRACTIONS = 16
MAX_EXTRACTION_CHARS = 300
# Attributes are short labels (a name, a kind, a date); a long one is a model rambling, and a
# reply cut off at max_tokens does not parse at all.
MAX_ATTRIBUTE_CHARS = 60

# LangExtract's envelope: {"extractions": [{"<class>": "...", "<class>_attributes": {...}}]}
EXTRACTIONS_KEY = "extractions"
ATTRIBUTE_SUFFIX = "_attributes"

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
            properties[f"{name}{ATTRIBUTE_SUFFIX}"] = {
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
        "properties": {EXTRACTIONS_KEY: {"type": "array", "items": item, "maxItems": max_items}},
        "required": [EXTRACTIONS_KEY],
        "additionalProperties": False,
    }


def is_gpt_oss(model_id: str) -> bool:
    return "gpt-oss" in model_id.lower()


def compact_reply(extractions: Sequence[tuple[str, str, Mapping[str, Any]]]) -> str:
    """An example's answer, ``(class, quote, attributes)`` each, as one line of JSON with
    attributes only where there are some. (LangExtract renders indented JSON with an empty
    ``<class>_attributes`` on every item; a model copies that layout, and each of its tokens
    costs as much time as a quoted word.)"""
    items: list[dict[str, Any]] = []
    for fact_class, text, attributes in extractions:
        item: dict[str, Any] = {fact_class: text}
        if attributes:
            item[f"{fact_class}{ATTRIBUTE_SUFFIX}"] = dict(attributes)
        items.append(item)
    return json.dumps({EXTRACTIONS_KEY: items}, ensure_ascii=False)


@dataclass(frozen=True)
class Framing:
    """How the requests of one prompt are sent. ``lead`` and ``tail`` are what LangExtract
    renders before and after each chunk; ``messages`` are the fixed turns sent in their place
    (the instructions, then each example as a user and an assistant turn), with the chunk
    after them as the last user message."""

    lead: str
    tail: str
    messages: tuple[Message, ...]

    def chunk_of(self, prompt: str) -> str | None:
        """The chunk LangExtract put in ``prompt``; None when the prompt is not shaped as
        expected (it is then sent as it is)."""
        if len(prompt) < len(self.lead) + len(self.tail):
            return None
        if not (prompt.startswith(self.lead) and prompt.endswith(self.tail)):
            return None
        return prompt[len(self.lead) : len(prompt) - len(self.tail)]


def is_envelope(reply: str) -> bool:
    """The reply is a whole ``{"extractions": [{...}, ...]}`` LangExtract can read."""
    try:
        parsed = json.loads(reply)
    except ValueError:
        return False
    return (
        isinstance(parsed, dict)
        and isinstance(parsed.get(EXTRACTIONS_KEY), list)
        and all(isinstance(item, dict) for item in parsed[EXTRACTIONS_KEY])
    )


def salvage(reply: str) -> tuple[str, int] | None:
    """A reply whose JSON stops short (cut off at ``max_tokens``) as a whole reply of the
    extractions it completed, and their number; None when it does not even open the
    envelope."""
    decoder = json.JSONDecoder()
    text = reply.strip()
    position = _skip(text, 0)
    for expected in ("{", f'"{EXTRACTIONS_KEY}"', ":", "["):
        if not text.startswith(expected, position):
            return None
        position = _skip(text, position + len(expected))
    items: list[dict[str, Any]] = []
    while position < len(text) and text[position] == "{":
        try:
            item, position = decoder.raw_decode(text, position)
        except ValueError:
            break  # the item the reply was cut in
        if not isinstance(item, dict):
            break
        items.append(item)
        position = _skip(text, position)
        if text.startswith(",", position):
            position = _skip(text, position + 1)
    return json.dumps({EXTRACTIONS_KEY: items}, ensure_ascii=False), len(items)


def _skip(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


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
        framing: Framing | None = None,
    ):
        super().__init__()
        self.chat = chat
        # Set by a stop request: the reply in flight is cut off (and the server's work on it
        # stopped) instead of running to its end, which on a long mail thread is minutes.
        self.cancel = cancel
        self.corpus_class = corpus_class
        self.schema_dict = schema
        self.max_tokens = max_tokens
        # None: LangExtract's text is sent as one user message (garage.facts.grounding sets
        # the prompt's framing before it runs LangExtract).
        self.framing = framing
        self.calls = 0
        self.unparsed = 0  # replies with nothing readable (prose, or cut before any item)
        self.cut = 0  # replies that stopped short of their JSON's end (max_tokens)
        # Our servers return bare JSON (a grammar, JSON mode or a firm instruction), so the
        # resolver should not look for a ```json fence.
        self.set_fence_output(False)

    @property
    def temperature(self) -> float:
        """0 under a grammar (llama-server, LM Studio): the same document gives the same facts
        whichever door asked. Ollama's JSON mode keeps the 0.1 LangExtract's own Ollama
        provider sent."""
        if self.chat.provider in ("llama_server", "lmstudio"):
            return 0.0
        return EXTRACTION_TEMPERATURE

    def messages_for(self, prompt: str) -> list[Message]:
        """The chat turns for one of LangExtract's prompts."""
        chunk = self.framing.chunk_of(prompt) if self.framing is not None else None
        if self.framing is not None and chunk is None:
            log.warning("LangExtract's prompt is not shaped as expected: sent as one message")
        if chunk is None:
            messages: list[Message] = [{"role": "user", "content": prompt}]
        else:
            assert self.framing is not None
            messages = [dict(m) for m in self.framing.messages]
            messages.append({"role": "user", "content": chunk})
        if self.chat.provider == "ollama" and is_gpt_oss(self.chat.model):
            if messages[0]["role"] == "system":
                messages[0]["content"] = f"{messages[0]['content']}\n\n{_JSON_ONLY}"
            else:
                messages.insert(0, {"role": "system", "content": _JSON_ONLY})
        return messages

    def _ask(self, prompt: str) -> str:
        messages = self.messages_for(prompt)
        provider = self.chat.provider
        json_schema: dict[str, Any] | None = None
        json_mode = False
        if provider in ("llama_server", "lmstudio"):
            # response_format json_schema: a grammar on llama-server; LM Studio refuses
            # json_object.
            json_schema = self.schema_dict
        elif not is_gpt_oss(self.chat.model):
            json_mode = True
        self.calls += 1
        finish: str | None = None
        if json_mode:
            # Ollama's JSON mode: one plain request (no stream to read a finish reason from).
            reply = self.chat.complete(
                messages,
                corpus_classes={self.corpus_class},
                json_mode=True,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                cancel=self.cancel,
            )
        else:
            pieces: list[str] = []
            for delta in self.chat.stream(
                messages,
                corpus_classes={self.corpus_class},
                json_schema=json_schema,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                cancel=self.cancel,
            ):
                pieces.append(delta.text)
                finish = delta.finish_reason or finish
            reply = "".join(pieces)
        return self._readable(reply, finish)

    def _readable(self, reply: str, finish: str | None) -> str:
        """The reply, or what can be read of it; cut and unreadable replies are counted, so
        the report says how much text went unread rather than showing it as "no facts"."""
        if is_envelope(reply):
            return reply
        salvaged = salvage(reply)
        if salvaged is None:
            self.unparsed += 1
            log.warning("a model reply is not JSON (finish: %s): its chunk yields nothing", finish)
            return reply
        self.cut += 1
        text, kept = salvaged
        log.warning(
            "a model reply stopped short of its end (finish: %s, max_tokens %d): the %d "
            "extractions it completed are kept, the rest of its chunk is unread",
            finish,
            self.max_tokens,
            kept,
        )
        return text

    def infer(
        self, batch_prompts: Sequence[str], **kwargs: Any
    ) -> Iterator[Sequence[ScoredOutput]]:
        # One request at a time: a local server runs one generation per slot anyway, and a
        # sequential run is what the progress bar and the timings describe.
        for prompt in batch_prompts:
            yield [ScoredOutput(score=1.0, output=self._ask(prompt))]
