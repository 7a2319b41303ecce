"""Distill: keep a group as it is, or ask the local chat model whether it states one claim.

A group whose farthest node is closer to its centroid than nodes all ``tight_similarity``
alike would be is kept without asking. The model sees any other group and either confirms it
with one sentence stating the claim, or says no, and the group dissolves (each node stands
alone). A group that holds a communication goes only to a loopback model: when the model is
elsewhere it is dissolved without a request, so no mail or chat text leaves the machine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from garage.clusters.model import Group
from garage.inference import LocalChatModel
from garage.inference.egress import COMMUNICATION

MAX_STATEMENTS = 12  # a group's statements shown to the model: enough to judge, and short
MAX_STATEMENT_CHARS = 240

INSTRUCTIONS = (
    "You check whether several statements, taken from different documents, all make the same "
    "claim. Answer with JSON only. If they all state the same claim, set same to true and "
    "write that claim as one plain sentence in statement, using only what the statements say. "
    "If any statement says something different (other numbers, dates, people or a negation), "
    "set same to false and leave statement empty."
)

SCHEMA = {
    "type": "object",
    "properties": {
        "same": {"type": "boolean"},
        "statement": {"type": "string", "maxLength": MAX_STATEMENT_CHARS},
    },
    "required": ["same", "statement"],
}


@dataclass(frozen=True)
class Verdict:
    confirmed: bool
    statement: str | None
    asked: bool  # False: decided without a request (the egress rule)
    reason: str = ""


def prompt_for(group: Group) -> str:
    statements = sorted(group.members, key=lambda m: m.fact_id)[:MAX_STATEMENTS]
    lines = [f"{i + 1}. {m.text[:400]}" for i, m in enumerate(statements)]
    return "Statements:\n" + "\n".join(lines)


def parse_reply(reply: str) -> tuple[bool, str | None]:
    """(same, statement); anything that is not a well-formed yes with a sentence is a no, so
    a garbled reply never keeps a group the model did not confirm."""
    try:
        data = json.loads(reply)
    except ValueError:
        return False, None
    if not isinstance(data, dict) or data.get("same") is not True:
        return False, None
    statement = data.get("statement")
    if not isinstance(statement, str) or not statement.strip():
        return False, None
    return True, " ".join(statement.split())[:MAX_STATEMENT_CHARS]


def ask(chat: LocalChatModel, group: Group, *, max_tokens: int = 96) -> Verdict:
    classes = {COMMUNICATION} if group.has_communication else {"document"}
    if group.has_communication and not chat.is_loopback:
        return Verdict(False, None, asked=False, reason="egress")
    messages = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": prompt_for(group)},
    ]
    # The guard in the client checks the classes again before any connection is opened.
    reply = chat.complete(
        messages,
        corpus_classes=classes,
        json_schema=SCHEMA if chat.provider in ("llama_server", "lmstudio") else None,
        json_mode=chat.provider == "ollama",
        temperature=0.0,
        max_tokens=max_tokens,
    )
    confirmed, statement = parse_reply(reply)
    return Verdict(confirmed, statement, asked=True, reason="" if confirmed else "model said no")
