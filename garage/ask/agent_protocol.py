"""How rag_agent's model and its tools talk: one JSON object per reply, a tool call or the answer.

Calls travel in the conversation, as one JSON object per reply
(``{"tool": "rag_search", "arguments": {...}}``, or ``{"answer": "..."}`` to finish), rather
than in the OpenAI ``tools`` field: llama-server, Ollama and LM Studio all render a chat template
from role/content pairs, so the one format works on each. Every reply is constrained to that
call-or-answer shape by the server's structured output (``reply_schema``: llama-server's and
LM Studio's ``response_format`` JSON schema, Ollama's ``format``), so even a small model cannot
write a turn that does not parse; the arguments themselves are still checked by each tool.
Each tool appears in the system prompt as a one-line signature
(arguments, allowed values, the first sentence of its description), which small models follow
better than a JSON schema. Arguments are validated against the tool's own signature, as
tools/call validates them, and an error goes back to the model to correct. A reply that is not
a tool call is the answer (plain text still counts, from a server that ignored the schema).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata, func_metadata
from pydantic import ValidationError


@dataclass
class AgentTool:
    name: str
    fn: Callable[..., Any]
    meta: FuncMetadata

    @classmethod
    def of(cls, fn: Callable[..., Any]) -> AgentTool:
        return cls(fn.__name__, fn, func_metadata(fn))

    @property
    def parameters(self) -> dict[str, Any]:
        return dict(self.meta.arg_model.model_json_schema().get("properties", {}))

    def signature(self) -> str:
        """``name(arg: type, opt?: a|b = default) — first sentence of the description``."""
        schema = self.meta.arg_model.model_json_schema()
        required = set(schema.get("required", []))
        parts = []
        for name, prop in schema.get("properties", {}).items():
            text = f"{name}{'' if name in required else '?'}: {_type_of(prop, schema)}"
            if "default" in prop and prop["default"] not in (None, [], ""):
                text += f" = {json.dumps(prop['default'])}"
            parts.append(text)
        doc = " ".join((self.fn.__doc__ or "").split())
        first = doc.split(". ")[0].rstrip(".")
        return f"{self.name}({', '.join(parts)}) - {first}."

    def call(self, arguments: dict[str, Any]) -> Any:
        """Validate ``arguments`` as tools/call does, then run the tool."""
        unknown = sorted(set(arguments) - set(self.parameters))
        if unknown:
            known = ", ".join(self.parameters) or "no arguments"
            raise ToolError(f"{self.name} has no argument {', '.join(unknown)} (it takes {known})")
        try:
            validated = self.meta.validate_arguments(arguments)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in error.errors()
            )
            raise ToolError(f"invalid arguments for {self.name}: {problems}") from None
        return self.fn(**validated)


def _type_of(prop: dict[str, Any], schema: dict[str, Any]) -> str:
    if "anyOf" in prop:
        kinds = [_type_of(p, schema) for p in prop["anyOf"] if p.get("type") != "null"]
        return "|".join(kinds)
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return _type_of(schema.get("$defs", {}).get(name, {}), schema)
    if "enum" in prop:
        return "|".join(str(v) for v in prop["enum"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type_of(prop.get('items', {}), schema)}"
    if kind == "integer" and "minimum" in prop:
        # A bound that only guards the database (ids, offsets) is noise to a small model.
        if prop.get("maximum", 10**7) > 10**6:
            return f"integer >= {prop['minimum']}"
        return f"integer {prop['minimum']}-{prop['maximum']}"
    return {"string": "text", "boolean": "true|false"}.get(kind, kind)


@dataclass
class Call:
    tool: str | None
    arguments: dict[str, Any]
    error: str | None


def reply_schema(tools: list[str] | None) -> dict[str, Any]:
    """The JSON schema every reply must match: a call of one of ``tools``, or an answer
    (``tools=None``: an answer only, for the last turn)."""
    answer = {
        "type": "object",
        "properties": {"answer": {"type": "string", "minLength": 1}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    if not tools:
        return answer
    call = {
        "type": "object",
        "properties": {"tool": {"type": "string", "enum": tools}, "arguments": {"type": "object"}},
        "required": ["tool", "arguments"],
        "additionalProperties": False,
    }
    return {"anyOf": [call, answer]}


# An answer object the reply-token limit cut off before its closing quote.
_CUT_ANSWER = re.compile(r'^\{\s*"answer"\s*:\s*"((?:[^"\\]|\\.)*)\\?$', re.DOTALL)


def answer_of(reply: str) -> str:
    """The answer in a reply that is not a tool call: ``{"answer": ...}``'s text (what there is
    of it when the token limit cut it off), or the reply itself."""
    text = reply.strip()
    try:
        value = json.loads(text)
    except ValueError:
        cut = _CUT_ANSWER.match(text)
        if cut is None:
            return text
        try:
            return str(json.loads(f'"{cut.group(1)}"')).strip()
        except ValueError:
            return cut.group(1).strip()
    if isinstance(value, dict) and isinstance(value.get("answer"), str):
        return value["answer"].strip()
    return text


def parse_reply(reply: str) -> Call | None:
    """The tool call in a reply; None when the reply is an answer. A reply that tries to be a
    call and fails (bad JSON, no tool name) comes back with an error for the model."""
    text = reply.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    start = 0 if text.startswith("{") else text.find('{"tool"')
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as error:
        if _CUT_ANSWER.match(text):
            return None  # an answer cut off by the token limit is still the answer
        return Call(None, {}, f"the reply is not valid JSON ({error.msg} at {error.pos})")
    if isinstance(value, dict) and "tool" not in value and isinstance(value.get("answer"), str):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("tool"), str):
        return Call(None, {}, 'a tool call is one JSON object with a "tool" name')
    arguments = value.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return Call(value["tool"], {}, '"arguments" must be a JSON object')
    return Call(value["tool"], arguments, None)
