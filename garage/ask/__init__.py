"""Answering from the index with the local chat model: rag_ask, rag_agent and rag_generate,
for the CLI, the MCP server and any other front door alike.

``ask`` (garage.ask.answer) answers from the best excerpts, citing them as [n], streamed
through ``on_text``; ``Agent`` (garage.ask.agent) lets the model search and read the index
itself; ``generate`` (garage.ask.generate) replies to a raw prompt. The names
below are the public ones; the modules hold the code.
"""

from garage.ask.agent import DEFAULT_STEPS, MAX_STEPS, Agent, AgentResult
from garage.ask.answer import DEFAULT_EXCERPTS, MAX_EXCERPTS, allowed_classes, ask
from garage.ask.excerpts import EXCERPT_CHARS, ask_messages, fit_excerpts, trim
from garage.ask.generate import generate
from garage.ask.model import chat_model
from garage.ask.reply import STRUCTURE_TOKENS
from garage.ask.types import (
    ANSWER_TOKENS,
    MAX_ANSWER_TOKENS,
    AskResult,
    Citation,
    GenerateResult,
    Progress,
)

__all__ = [
    "ANSWER_TOKENS",
    "DEFAULT_EXCERPTS",
    "DEFAULT_STEPS",
    "EXCERPT_CHARS",
    "MAX_ANSWER_TOKENS",
    "MAX_EXCERPTS",
    "MAX_STEPS",
    "STRUCTURE_TOKENS",
    "Agent",
    "AgentResult",
    "AskResult",
    "Citation",
    "GenerateResult",
    "Progress",
    "allowed_classes",
    "ask",
    "ask_messages",
    "chat_model",
    "fit_excerpts",
    "generate",
    "trim",
]
