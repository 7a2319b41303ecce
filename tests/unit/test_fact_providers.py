"""How fact extraction asks each provider for JSON, against the FAKE Ollama and LM Studio
servers (tests/fakes/model_servers.py: neither server can be installed here; llama-server is
the real peer in tests/integration/test_facts.py). LangExtract's prompting, parsing and
alignment are real."""

from __future__ import annotations

import json

from garage.facts.grounding import extract_prompt
from garage.facts.language_model import GarageLanguageModel, extraction_schema
from garage.facts.prompts import DEFAULT_PROMPT
from garage.inference import EgressGuard, InferenceClient, LocalChatModel
from tests.fakes.model_servers import FakeState, fake_server

TEXT = "The Lisbon office opens on 3 March. Maria leads twelve engineers."
REPLY = json.dumps(
    {"extractions": [{"fact": "Maria leads twelve engineers."}, {"fact": "Cats rule Mars."}]}
)


def _run(flavour: str, model_id: str) -> tuple[list[tuple[str, dict]], object]:  # type: ignore[type-arg]
    state = FakeState(models={model_id}, reply=REPLY)
    provider = "ollama" if flavour == "ollama" else "lmstudio"
    with fake_server(flavour, state) as host:
        with InferenceClient(EgressGuard([host])) as client:
            model = GarageLanguageModel(
                LocalChatModel(client, provider, host, model_id),
                corpus_class="communication",  # loopback: allowed
                schema=extraction_schema(["fact"]),
            )
            result = extract_prompt(TEXT, DEFAULT_PROMPT, model)
    return state.requests, result


def test_ollama_gets_json_mode_at_extraction_temperature() -> None:
    requests, result = _run("ollama", "gemma2:2b")
    [(path, body)] = requests
    assert path == "/api/chat"
    assert body["format"] == "json" and body["options"]["temperature"] == 0.1
    # The instructions, the example as a user and an assistant turn, then the chunk: the
    # turns before the chunk are the same in every request of the prompt (a cached prefix).
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0]["content"] == DEFAULT_PROMPT.description
    [example] = DEFAULT_PROMPT.examples
    assert messages[1]["content"] == example.text
    # The example's answer is compact JSON, with no empty attributes for the model to copy.
    assert messages[2]["content"] == json.dumps(
        {"extractions": [{"fact": x.text} for x in example.extractions]}
    )
    assert messages[3]["content"] == TEXT
    # Grounded: the real sentence is kept at its offsets, the invented one dropped.
    assert [(f.text, f.start) for f in result.facts] == [  # type: ignore[attr-defined]
        ("Maria leads twelve engineers.", TEXT.index("Maria"))
    ]
    assert result.dropped == 1  # type: ignore[attr-defined]


def test_gpt_oss_gets_a_json_only_instruction_instead_of_json_mode() -> None:
    requests, _ = _run("ollama", "gpt-oss:20b")
    [(_, body)] = requests
    assert "format" not in body
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][0]["content"].startswith(DEFAULT_PROMPT.description)
    assert "JSON" in body["messages"][0]["content"]
    assert body["messages"][-1] == {"role": "user", "content": TEXT}


def test_lm_studio_gets_a_json_schema_never_json_object() -> None:
    requests, result = _run("lmstudio", "google/gemma-3-4b")
    [(path, body)] = requests
    assert path == "/v1/chat/completions"
    # LM Studio refuses "json_object"; it takes "json_schema" and constrains output to it.
    assert body["response_format"]["type"] == "json_schema"
    assert "extractions" in body["response_format"]["json_schema"]["schema"]["properties"]
    assert len(result.facts) == 1  # type: ignore[attr-defined]


def _lmstudio(reply: str, text: str = TEXT, **options: object):  # type: ignore[no-untyped-def]
    state = FakeState(models={"google/gemma-3-4b"}, reply=reply)
    with fake_server("lmstudio", state) as host:
        with InferenceClient(EgressGuard([host])) as client:
            model = GarageLanguageModel(
                LocalChatModel(client, "lmstudio", host, "google/gemma-3-4b"),
                corpus_class="document",
                schema=extraction_schema(["fact"]),
            )
            result = extract_prompt(text, DEFAULT_PROMPT, model, **options)  # type: ignore[arg-type]
    return state.requests, result


def test_a_reply_cut_off_keeps_what_it_completed_and_is_counted() -> None:
    # What a reply cut at max_tokens looks like: LangExtract alone drops the whole chunk.
    cut = '{"extractions": [{"fact": "Maria leads twelve engineers."}, {"fact": "The Lisbon off'
    _, result = _lmstudio(cut)
    assert (result.requests, result.cut, result.unparsed) == (1, 1, 0)
    assert [f.text for f in result.facts] == ["Maria leads twelve engineers."]


def test_a_reply_with_nothing_readable_is_counted_as_unparsed() -> None:
    _, result = _lmstudio("I am sorry, I cannot help with that.")
    assert (result.requests, result.cut, result.unparsed) == (1, 0, 1)
    assert result.facts == []
    # Cut before its first item: nothing to keep, but it is a cut reply, not prose.
    _, result = _lmstudio('{"extractions": [{"fact": "Maria le')
    assert (result.cut, result.unparsed, result.facts) == (1, 0, [])


def test_every_chunk_follows_the_same_fixed_turns() -> None:
    text = " ".join([TEXT] * 12)  # several chunks at 200 characters
    requests, result = _lmstudio(REPLY, text, max_char_buffer=200)
    assert result.requests == len(requests) > 2
    fixed = [body["messages"][:-1] for _, body in requests]
    assert all(turns == fixed[0] for turns in fixed)
    chunks = [body["messages"][-1]["content"] for _, body in requests]
    # Each chunk is a piece of the text, sent as it is, without LangExtract's "Q:"/"A:".
    assert all(chunk in text and not chunk.startswith("Q: ") for chunk in chunks)
    assert len("".join(chunks)) >= len(text) - len(chunks)
