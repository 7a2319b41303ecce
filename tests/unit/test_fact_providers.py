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
    assert [m["role"] for m in body["messages"]] == ["user"]
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
    assert "JSON" in body["messages"][0]["content"]


def test_lm_studio_gets_a_json_schema_never_json_object() -> None:
    requests, result = _run("lmstudio", "google/gemma-3-4b")
    [(path, body)] = requests
    assert path == "/v1/chat/completions"
    # LM Studio refuses "json_object"; it takes "json_schema" and constrains output to it.
    assert body["response_format"]["type"] == "json_schema"
    assert "extractions" in body["response_format"]["json_schema"]["schema"]["properties"]
    assert len(result.facts) == 1  # type: ignore[attr-defined]
