"""The splitter port matches langchain-text-splitters chunk for chunk and offset for offset."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from langchain_text_splitters import Language, RecursiveCharacterTextSplitter

from garage.chunk import chunker_for

STDLIB = Path(os.__file__).parent
CODE = sorted(STDLIB.glob("*.py"))[:120]
PROSE = sorted(STDLIB.parent.rglob("LICENSE*"))[:5] + sorted(STDLIB.rglob("*.txt"))[:40]
EDGE_CASES = [
    "",
    "short",
    "x" * 5000,  # one huge word
    "line one\r\nline two\r\n\r\n" * 200,
    "Ünïcödé — 日本語のテキスト。 " * 300,
    "# Title\n\nSome text.\n\n## Part\n\n" + "word " * 900 + "\n\n```\ncode block\n```\n",
]


def reference(kind: str, language: str | None) -> RecursiveCharacterTextSplitter:
    if kind == "code":
        return RecursiveCharacterTextSplitter.from_language(
            Language(language), chunk_size=1500, chunk_overlap=150, add_start_index=True
        )
    if kind == "markdown":
        return RecursiveCharacterTextSplitter.from_language(
            Language.MARKDOWN, chunk_size=1000, chunk_overlap=100, add_start_index=True
        )
    return RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=100, add_start_index=True)


def assert_same(kind: str, language: str | None, text: str) -> int:
    ours = chunker_for(kind, language).split(text)
    theirs = reference(kind, language).create_documents([text])
    assert [(c.start, c.text) for c in ours] == [
        (d.metadata["start_index"], d.page_content) for d in theirs
    ]
    for chunk in ours:
        assert text[chunk.start : chunk.end] == chunk.text
    return len(ours)


@pytest.mark.parametrize("path", CODE, ids=lambda p: p.name)
def test_python_code_matches_langchain(path: Path) -> None:
    assert_same("code", "python", path.read_text(encoding="utf-8", errors="replace"))


def test_prose_and_markdown_match_langchain() -> None:
    assert len(PROSE) >= 5
    total = 0
    for path in PROSE:
        text = path.read_text(encoding="utf-8", errors="replace")
        total += assert_same("prose", None, text)
        total += assert_same("markdown", None, text)
    assert total > 50


@pytest.mark.parametrize("language", ["js", "go", "rust", "java", "cpp", "ruby"])
def test_other_languages_match_langchain(language: str) -> None:
    text = "\n".join(p.read_text(errors="replace") for p in CODE[:10])
    assert_same("code", language, text)


@pytest.mark.parametrize("text", EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_edge_cases_match_langchain(text: str) -> None:
    for kind in ("prose", "markdown"):
        assert_same(kind, None, text)
    assert_same("code", "python", text)


def test_signatures() -> None:
    assert chunker_for("prose").signature == "recursive:1000/100"
    assert chunker_for("markdown").signature == "markdown:1000/100"
    assert chunker_for("code", "python").signature == "code:python:1500/150"
    assert chunker_for("code", "javascript").signature == "code:js:1500/150"
    assert chunker_for("code", "brainfuck").signature == "code:generic:1500/150"


def test_markdown_chunks_carry_their_heading() -> None:
    text = "# Intro\n\n" + "alpha " * 300 + "\n\n## Second part\n\n" + "beta " * 300
    chunks = chunker_for("markdown").split(text)
    assert chunks[0].heading == "Intro"
    assert chunks[-1].heading == "Second part"
