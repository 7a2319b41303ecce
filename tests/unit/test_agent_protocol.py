"""rag_agent's conversation protocol without a model: reading a reply as a call or an
answer, the one-line signatures, and argument validation against each tool's signature."""

from __future__ import annotations

import re

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from garage.ask.agent import Agent
from garage.ask.agent_protocol import AgentTool, answer_of, parse_reply, reply_schema
from garage.ask.tools import CorpusTools
from garage.config import GarageConfig


class NoModel:
    """Stands in where the agent only needs a model's name (no request is made)."""

    model = "none"


def _agent(*, communications: bool = True, owner: str | None = "Jane Doe") -> Agent:
    config = GarageConfig.model_validate({"identity": {"self_name": owner}})
    tools = CorpusTools(None, allow_communications=communications)  # type: ignore[arg-type]
    return Agent(tools, NoModel(), config)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reply", "tool", "arguments"),
    [
        ('{"tool": "rag_search", "arguments": {"query": "bmw"}}', "rag_search", {"query": "bmw"}),
        ('```json\n{"tool": "rag_stats", "arguments": {}}\n```', "rag_stats", {}),
        ('{"tool": "rag_stats"}', "rag_stats", {}),
        ('{"tool": "rag_stats", "arguments": null}', "rag_stats", {}),
        ('Let me look. {"tool": "rag_list_sources", "arguments": {}}', "rag_list_sources", {}),
        ('{"tool": "rag_stats", "arguments": {}} and then more', "rag_stats", {}),
    ],
)
def test_tool_calls_are_read(reply: str, tool: str, arguments: dict[str, object]) -> None:
    call = parse_reply(reply)
    assert call is not None and call.error is None
    assert (call.tool, call.arguments) == (tool, arguments)


@pytest.mark.parametrize(
    "reply",
    ["The meeting was on May 3 [doc 12].", "", "Use a dict like {a: 1} for that.", "{x"],
)
def test_anything_else_is_an_answer_or_an_error(reply: str) -> None:
    call = parse_reply(reply)
    if reply.startswith("{"):
        assert call is not None and call.error and "not valid JSON" in call.error
    else:
        assert call is None


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ('{"tool": "rag_search", "arguments": {"query": "x"', "not valid JSON"),
        ('{"name": "rag_search"}', '"tool" name'),
        ('{"tool": 5}', '"tool" name'),
        ('{"tool": "rag_search", "arguments": "query=x"}', '"arguments" must be a JSON object'),
    ],
)
def test_broken_calls_carry_an_error_for_the_model(reply: str, error: str) -> None:
    call = parse_reply(reply)
    assert call is not None and call.error is not None and error in call.error


def test_signatures_are_one_line_each_with_allowed_values() -> None:
    agent = _agent()
    lines = {name: tool.signature() for name, tool in agent.tools.items()}
    assert list(lines) == [
        "rag_search", "rag_get_document", "rag_list_sources", "rag_list_authors", "rag_stats",
    ]  # fmt: skip
    assert all("\n" not in line for line in lines.values())
    search = lines["rag_search"]
    assert search.startswith("rag_search(query: text, limit?: integer 1-100 = 10, ")
    assert 'mode?: hybrid|vector|keyword = "hybrid"' in search
    assert "corpus_classes?: list of document|code|communication" in search
    assert "direction?: sent|received" in search
    assert search.endswith(
        " - Search the owner's files, notes, code, mail and chats for passages about a query."
    )
    assert "document_id?: integer >= 1" in lines["rag_get_document"]
    assert lines["rag_stats"].startswith("rag_stats() - Count what the index holds")


def test_system_prompt_names_the_owner_and_the_content_rule() -> None:
    prompt = _agent().system_prompt()
    assert "Jane Doe's own private index" in prompt and "mail and chats. The index" in prompt
    assert prompt.count("\n- rag_") == 5
    withheld = _agent(communications=False, owner=None).system_prompt()
    assert "the user's own private index: their files, notes, code. The index" in withheld


def test_arguments_are_validated_against_the_tool_signature() -> None:
    tool = AgentTool.of(_agent().tools["rag_search"].fn)
    with pytest.raises(ToolError, match=r"query: Field required"):
        tool.call({})
    with pytest.raises(ToolError, match=r"limit: Input should be less than or equal to 100"):
        tool.call({"query": "x", "limit": 1000})
    with pytest.raises(ToolError, match=r"has no argument q \(it takes query, limit"):
        tool.call({"q": "x"})
    with pytest.raises(ToolError, match=r"corpus_classes\.0"):
        tool.call({"query": "x", "corpus_classes": ["secrets"]})


def test_an_answer_object_is_an_answer() -> None:
    reply = '{"answer": "It was on May 3 [doc 12]."}'
    assert parse_reply(reply) is None
    assert answer_of(reply) == "It was on May 3 [doc 12]."
    assert answer_of("Plain text answer.") == "Plain text answer."
    # Cut off by the reply-token limit: still the answer, as far as it got.
    cut = '{"answer": "The for loop iterates [doc 3]. It can \\"break\\" out early and'
    assert parse_reply(cut) is None
    assert answer_of(cut) == 'The for loop iterates [doc 3]. It can "break" out early and'


def test_every_reply_is_constrained_to_a_call_or_an_answer() -> None:
    names = list(_agent().tools)
    schema = reply_schema(names)
    call, answer = schema["anyOf"]
    assert call["properties"]["tool"]["enum"] == names
    assert call["required"] == ["tool", "arguments"] and answer["required"] == ["answer"]
    assert call["additionalProperties"] is False and answer["additionalProperties"] is False
    # The last turn after the step limit may only answer.
    assert reply_schema(None) == answer


def test_only_hits_the_model_is_shown_become_citations() -> None:
    # Twenty long hits overflow one tool result: the ones left out must not be cited.
    from garage.ask.agent import RESULT_CHARS, _Run
    from garage.search.types import SearchHit, SearchResponse

    hits = [
        SearchHit(
            chunk_id=n,
            document_id=100 + n,
            uri=f"file:///notes/{n}.md",
            title=f"Note {n}",
            source="notes",
            corpus_class="document",
            author=None,
            start_offset=0,
            end_offset=500,
            excerpt="word " * 100,
            score=1.0 / n,
            vector_rank=n,
            keyword_rank=n,
        )  # fmt: skip
        for n in range(1, 21)
    ]
    run = _Run(_agent(), "what do the notes say?")
    shown = run._render(SearchResponse("notes", "hybrid", hits, 1.0))
    assert len(shown) <= RESULT_CHARS + 2
    named = {int(n) for n in re.findall(r"\[doc (\d+)\]", shown)}
    assert 1 <= len(named) < 20
    assert set(run.seen) == named
    assert f"({20 - len(named)} more hits left out)" in shown
