"""rag_ask and rag_agent on the real corpus with the real SmolLM2 (llama-server on loopback):
the structure of what comes back (citations that resolve, steps recorded, errors returned to
the model), never the wording of a 135M model. The privacy rule is tested against a model
host that is not loopback, which cannot exist here: a fake model server stands in for it
(FakeRemoteModel), and the tests check what would have been sent to it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from click.testing import CliRunner

from garage.ask import STRUCTURE_TOKENS, ask
from garage.ask.agent import Agent
from garage.ask.tools import CorpusTools
from garage.cli import cli
from garage.config import GarageConfig
from garage.db.runtime import Runtime
from garage.inference import EgressGuard, EgressRefused, InferenceClient, LocalChatModel
from tests.conftest import LlamaServers
from tests.integration.mcp_helpers import McpCorpus, mcp_corpus
from tests.integration.search_helpers import MESSAGES

REMOTE_HOST = "http://10.20.30.40:8081"  # not loopback; nothing listens there
MESSAGE_TEXTS = [text for *_, text in MESSAGES]


@pytest.fixture(scope="module")
def corpus(
    pg_server_url: str, llama: LlamaServers, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpCorpus]:
    with mcp_corpus(pg_server_url, llama, tmp_path_factory.mktemp("ask")) as built:
        yield built


class Recording(httpx.BaseTransport):
    """Passes every request to the real llama-server and keeps the JSON body of each chat
    request (and the texts sent to /tokenize)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.bodies: list[dict[str, Any]] = []
        self.tokenized: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/chat/completions":
            self.bodies.append(json.loads(request.content))
        elif request.url.path == "/tokenize":
            self.tokenized.append(json.loads(request.content)["content"])
        return self.inner.handle_request(request)


class FakeRemoteModel(httpx.BaseTransport):
    """A fake OpenAI-compatible chat server standing in for a model host on another machine:
    it answers with scripted replies and records every request body it would have received."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.bodies: list[dict[str, Any]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path != "/v1/chat/completions":  # no /props, no /tokenize
            return httpx.Response(404, json={"error": "Unexpected endpoint"})
        body = json.loads(request.content)
        self.bodies.append(body)
        reply = self.replies.pop(0) if self.replies else "That is all I know."
        return httpx.Response(
            200, json={"choices": [{"message": {"role": "assistant", "content": reply}}]}
        )


class ScriptedThenReal:
    """The model's first replies come from a script (a fake: a 135M model cannot be made to
    err on cue), the rest from the real SmolLM2; every conversation it is handed is kept."""

    def __init__(self, real: LocalChatModel, replies: list[str]) -> None:
        self.real = real
        self.model = real.model
        self.replies = list(replies)
        self.conversations: list[list[dict[str, str]]] = []

    def complete(self, messages: Any, **options: Any) -> str:
        self.conversations.append([dict(m) for m in messages])
        if self.replies:
            return self.replies.pop(0)
        return self.real.complete(messages, **options)


def _model(config: GarageConfig, transport: httpx.BaseTransport) -> LocalChatModel:
    client = InferenceClient(EgressGuard.from_config(config), transport=transport, retries=0)
    return LocalChatModel.from_config(config, client=client)


def _remote(corpus: McpCorpus) -> GarageConfig:
    config = corpus.config.model_copy(deep=True)
    config.inference.llama_host = REMOTE_HOST
    return config


def _documents(url: str) -> dict[int, tuple[str, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT id, uri, content FROM documents").fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


def _sent_text(bodies: list[dict[str, Any]]) -> str:
    return "\n".join(m["content"] for body in bodies for m in body["messages"])


# -- rag_ask --------------------------------------------------------------------------------------


def test_ask_cites_each_excerpt_it_showed_the_model(corpus: McpCorpus) -> None:
    transport = Recording()
    model = _model(corpus.config, transport)
    with psycopg.connect(corpus.url, autocommit=True) as conn:
        result = ask(
            conn,
            corpus.config,
            "How do I handle an exception with try and except?",
            limit=3,
            model=model,
            answer_tokens=64,
        )
    assert result.answer and result.model == "smollm2-135m-instruct"
    assert result.search_mode == "hybrid" and result.withheld == 0
    assert [c.number for c in result.citations] == [1, 2, 3]
    documents = _documents(corpus.url)
    for citation in result.citations:
        uri, content = documents[citation.document_id]
        assert citation.uri == uri
        excerpt = citation.excerpt.removeprefix("… ").removesuffix(" …")
        assert len(excerpt) <= corpus.config.ask.excerpt_chars
        assert excerpt in content[citation.start_offset : citation.end_offset]
    # A second request only when the threshold overruled the model's "no": the same prompt.
    body = transport.bodies[-1]
    assert len(transport.bodies) in (1, 2)
    assert all(b["messages"] == body["messages"] for b in transport.bodies)
    prompt = body["messages"][-1]["content"]
    for citation in result.citations:
        assert f"Excerpt [{citation.number}], " in prompt and citation.excerpt in prompt
    assert body["max_tokens"] == 64 + STRUCTURE_TOKENS


def test_ask_shows_fewer_excerpts_when_they_overflow_the_context(corpus: McpCorpus) -> None:
    # 20 excerpts of up to 1,200 characters are far more than SmolLM2's 2,048-token slot: the
    # prompt is counted in the server's own tokens and cut to fit before it is sent.
    transport = Recording()
    model = _model(corpus.config, transport)
    with psycopg.connect(corpus.url, autocommit=True) as conn:
        result = ask(
            conn, corpus.config, "functions loops exceptions", limit=20, model=model,
            answer_tokens=32,
        )  # fmt: skip
    # Accepted at once, nothing overflowed (a second request is the same prompt asked again
    # when the threshold overruled the model's "no").
    body = transport.bodies[0]
    assert all(b["messages"] == body["messages"] for b in transport.bodies)
    assert transport.tokenized and model.context_tokens() == 2048
    assert 1 <= len(result.citations) < 20
    assert any("left out to fit" in note for note in result.notes)
    prompt = body["messages"][-1]["content"]
    numbers = re.findall(r"^Excerpt \[(\d+)\], ", prompt, re.M)
    assert numbers == [str(c.number) for c in result.citations]
    sent = "\n".join(m["content"] for m in body["messages"])
    assert model.count_tokens(sent) + 32 <= 2048


def test_communications_never_reach_a_model_host_off_this_machine(corpus: McpCorpus) -> None:
    config = _remote(corpus)
    config.ask.min_support = 0.0  # the fake's "An answer [1]." holds no word of an excerpt
    fake = FakeRemoteModel(["An answer [1]."])
    model = _model(config, fake)
    assert not model.is_loopback
    with psycopg.connect(corpus.url, autocommit=True) as conn:
        with pytest.raises(EgressRefused, match="nothing to search"):
            ask(conn, config, "train tickets", corpus_classes=["communication"], model=model)
        assert fake.bodies == []
        # The guard itself refuses a request that carries a communication to that host.
        with pytest.raises(EgressRefused, match="communication"):
            model.complete(
                [{"role": "user", "content": MESSAGE_TEXTS[0]}], corpus_classes={"communication"}
            )
        assert fake.bodies == []
        # A question the chat thread answers best: the model is shown documents only.
        result = ask(conn, config, "Did you book the train tickets to Lisbon?", model=model)
    assert result.answer == "An answer [1]."
    assert result.citations and {c.corpus_class for c in result.citations} <= {"document", "code"}
    assert any("communications were left out" in note for note in result.notes)
    sent = _sent_text(fake.bodies)
    assert not any(text in sent for text in MESSAGE_TEXTS)


# -- rag_agent ------------------------------------------------------------------------------------


def test_agent_starts_from_a_search_and_cites_what_it_saw(corpus: McpCorpus) -> None:
    runtime = Runtime(corpus.config, corpus.url)
    transport = Recording()
    model = _model(corpus.config, transport)
    agent = Agent(CorpusTools(runtime), model, corpus.config, reply_tokens=96)
    result = agent.run("What does the tutorial say about the for statement?", max_steps=2)
    first = result.steps[0]
    assert first.preset and first.tool == "rag_search" and first.ok
    assert first.arguments == {"query": result.question, "limit": 5}
    assert result.stopped in ("answer", "step_limit") and result.answer
    assert all(step.number == n for n, step in enumerate(result.steps, 1))
    # One citation per document seen, each resolving to the document it names.
    documents = _documents(corpus.url)
    seen = {int(n) for step in result.steps for n in re.findall(r"\[doc (\d+)\]", step.result)}
    assert seen and {c.document_id for c in result.citations} == seen
    for citation in result.citations:
        assert documents[citation.document_id][0] == citation.uri
    # The model was shown the call it "made" and its result, with the owner's name.
    messages = transport.bodies[0]["messages"]
    assert "Jane Doe" in messages[0]["content"]
    assert "rag_search(query: text, limit?: integer 1-100 = 10" in messages[0]["content"]
    assert json.loads(messages[2]["content"])["tool"] == "rag_search"
    assert messages[3]["content"].startswith("Result of rag_search:")


def test_malformed_tool_calls_go_back_to_the_model_as_errors(corpus: McpCorpus) -> None:
    runtime = Runtime(corpus.config, corpus.url)
    real = _model(corpus.config, Recording())
    bad = [
        '{"tool": "rag_search", "arguments": {"query": "exceptions"',
        '{"tool": "rag_search", "arguments": {"limit": "many"}}',
        '{"tool": "rag_delete_everything", "arguments": {}}',
        '{"tool": "rag_search", "arguments": {"query": "try", "bogus": 1}}',
        '{"tool": "rag_get_document", "arguments": {"document_id": 987654321}}',
    ]
    model = ScriptedThenReal(real, bad)
    agent = Agent(CorpusTools(runtime), model, corpus.config, reply_tokens=64)  # type: ignore[arg-type]
    result = agent.run("What is an exception?", max_steps=6, search_first=False)
    errors = [step.error for step in result.steps[:5]]
    assert [step.ok for step in result.steps[:5]] == [False] * 5
    assert "not valid JSON" in str(errors[0])
    assert "invalid arguments for rag_search" in str(errors[1])
    assert "query: Field required" in str(errors[1]) and "limit:" in str(errors[1])
    assert "there is no tool 'rag_delete_everything'" in str(errors[2])
    assert "rag_search has no argument bogus" in str(errors[3])
    assert "no document with id 987654321" in str(errors[4])
    # SmolLM2 itself then got the whole exchange: each bad reply followed by its error.
    handed = model.conversations[5]
    for reply, error in zip(bad, errors, strict=True):
        index = next(i for i, m in enumerate(handed) if m["content"] == reply)
        assert handed[index]["role"] == "assistant"
        assert handed[index + 1]["role"] == "user" and str(error) in handed[index + 1]["content"]
    assert len(result.steps) >= 5 and result.answer


def test_agent_withholds_communications_from_a_remote_model(corpus: McpCorpus) -> None:
    config = _remote(corpus)
    fake = FakeRemoteModel(
        [
            json.dumps(
                {"tool": "rag_get_document", "arguments": {"document_id": corpus.thread_id}}
            ),
            json.dumps(
                {
                    "tool": "rag_search",
                    "arguments": {"query": "train", "corpus_classes": ["communication"]},
                }
            ),  # fmt: skip
            "Nothing about trains.",
        ]
    )
    model = _model(config, fake)
    runtime = Runtime(config, corpus.url)
    tools = CorpusTools(runtime, allow_communications=model.is_loopback)
    result = Agent(tools, model, config).run("Did I book the train tickets to Lisbon?")
    preset, fetch, search = result.steps
    assert preset.ok and "communication" not in preset.result
    assert not fetch.ok and "is a communication" in str(fetch.error)
    assert not search.ok and "communications are not available" in str(search.error)
    assert result.answer == "Nothing about trains." and result.stopped == "answer"
    assert {c.corpus_class for c in result.citations} <= {"document", "code"}
    assert "their files, notes, code. The index" in fake.bodies[0]["messages"][0]["content"]
    sent = _sent_text(fake.bodies)
    assert not any(text in sent for text in MESSAGE_TEXTS)


# -- garage ask -----------------------------------------------------------------------------------


def test_garage_ask_command(corpus: McpCorpus, tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["--config", str(corpus.config_file), "ask"]
    result = runner.invoke(
        cli, [*base, "What", "is", "an", "exception?", "--limit", "2", "--max-tokens", "32",
              "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    assert answer["question"] == "What is an exception?"
    assert answer["answer"] and len(answer["citations"]) == 2

    result = runner.invoke(
        cli, [*base, "What is an exception?", "--agent", "--max-steps", "1", "--max-tokens", "48",
              "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    agent = json.loads(result.output)
    assert agent["steps"][0]["preset"] is True and agent["citations"]

    result = runner.invoke(cli, [*base, "anything", "--limit", "2", "--max-tokens", "16"])
    assert result.exit_code == 0, result.output
    assert "Sources:\n  [1] " in result.output

    no_model = corpus.config_with(tmp_path / "no-model.json", inference={})
    result = runner.invoke(cli, ["--config", str(no_model), "ask", "anything"])
    assert result.exit_code == 1 and "no chat model is configured" in result.output
