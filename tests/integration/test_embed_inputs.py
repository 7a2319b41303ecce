"""What a model embeds for a chunk: the chunk alone, or with its context (title, heading, and
the next chunk for a short one); a change of input re-embeds; reuse keys on the input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.rows import dict_row

from garage.config import GarageConfig
from garage.embed import embed
from garage.embed.registry import registered_models
from garage.inference import EgressGuard, InferenceClient
from tests.conftest import LlamaServers, llama_config
from tests.integration.ingest_helpers import run_ingest

# A Markdown note as people write them: a title line above a long first paragraph (the
# splitter leaves the title as a chunk of its own), then a section under its own heading.
PARAGRAPH = (
    "The reference board boots from SPI flash. Before the second-stage loader runs, the boot "
    "ROM checks the signature of the loader image against the key hash fused into the chip; a "
    "board whose fuses were never programmed accepts any image, which is why the lab boards "
    "must be fused before they leave the bench. A failed check halts the board with the status "
    "LED blinking twice. "
)
NOTE = (
    "# Secure boot on the reference board\n\n"
    + PARAGRAPH * 3
    + "\n\n## Recovering a bricked board\n\n"
    + "Hold the recovery button while powering the board to enter the USB loader. " * 8
    + "\n"
)


def _config(llama: LlamaServers, root: Path, embedding_input: str) -> GarageConfig:
    config = llama_config(llama, sources=[{"name": "notes", "roots": [str(root)]}])
    [model] = config.embedding.models
    models = [model.model_copy(update={"input": embedding_input})]
    return config.model_copy(
        update={"embedding": config.embedding.model_copy(update={"models": models})}
    )


def _embed_text(config: GarageConfig, texts: list[str]) -> list[np.ndarray]:
    [model] = config.embedding.models
    with InferenceClient(EgressGuard.from_config(config)) as client:
        result = client.embed(model.provider, model.host, model.model, texts)  # type: ignore[arg-type]
    return [np.asarray(v) for v in result.vectors]


def _vectors(url: str) -> dict[int, dict[str, Any]]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        rows = conn.execute(
            "SELECT c.id, c.ord, c.text, c.heading, c.start_offset, c.end_offset, d.title,"
            " e.embedding::text AS embedding, e.input_sha256"
            " FROM chunks c JOIN documents d ON d.id = c.document_id"
            " JOIN emb_all_minilm_l6_v2 e ON e.chunk_id = c.id ORDER BY c.ord"
        ).fetchall()
    for row in rows:
        row["embedding"] = np.asarray([float(x) for x in row["embedding"].strip("[]").split(",")])
    return {row["id"]: row for row in rows}


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _run(url: str, config: GarageConfig) -> Any:
    with psycopg.connect(url, autocommit=True) as conn:
        with InferenceClient(EgressGuard.from_config(config)) as client:
            [report] = embed(conn, client, config)
    return report


def test_context_input_carries_title_heading_and_joins_a_lone_title(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "secure-boot.md").write_text(NOTE)
    config = _config(llama, root, "context")
    run_ingest(migrated_db, config, "notes")
    report = _run(migrated_db, config)
    chunks = sorted(_vectors(migrated_db).values(), key=lambda row: row["ord"])
    assert report.vectors_written == len(chunks) >= 3
    title_chunk, *rest = chunks
    # The splitter left the title line on its own; stored text and offsets are untouched.
    assert title_chunk["text"] == "# Secure boot on the reference board"
    assert NOTE[title_chunk["start_offset"] : title_chunk["end_offset"]] == title_chunk["text"]
    title = title_chunk["title"]
    assert title == "Secure boot on the reference board"

    # The lone title is embedded with the chunk after it, under the document's title.
    expected = [
        f"{title}\n\n{title_chunk['text']}\n\n{rest[0]['text']}",
        *(
            f"{title}\n{row['heading']}\n\n{row['text']}"
            if row["heading"] != title
            else f"{title}\n\n{row['text']}"
            for row in rest
        ),
    ]
    direct = _embed_text(config, expected)
    alone = _embed_text(config, [row["text"] for row in chunks])
    for row, want, plain in zip(chunks, direct, alone, strict=True):
        assert _cosine(row["embedding"], want) > 0.999
        if row is title_chunk:
            # Not the vector of the title's few words by themselves.
            assert _cosine(row["embedding"], plain) < 0.95
    assert any(row["heading"] == "Recovering a bricked board" for row in rest)


def test_changing_the_input_reembeds_and_never_mixes(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "secure-boot.md").write_text(NOTE)
    plain = _config(llama, root, "chunk")
    run_ingest(migrated_db, plain, "notes")
    first = _run(migrated_db, plain)
    before = _vectors(migrated_db)
    assert first.vectors_written == len(before)
    with psycopg.connect(migrated_db) as conn:
        [model] = registered_models(conn)
        assert model.input == "chunk"
        # Under the plain input the reuse key is the chunk text's own hash.
        hashes = dict(conn.execute("SELECT id, text_sha256 FROM chunks").fetchall())
    assert {i: row["input_sha256"] for i, row in before.items()} == hashes

    context = _config(llama, root, "context")
    second = _run(migrated_db, context)
    after = _vectors(migrated_db)
    # Every passage embedded again, none copied from the vectors made the other way.
    assert set(after) == set(before)
    assert second.vectors_written == len(after) and second.vectors_reused == 0
    with psycopg.connect(migrated_db) as conn:
        [model] = registered_models(conn)
    assert model.input == "context:v1"
    assert all(_cosine(after[i]["embedding"], before[i]["embedding"]) < 0.9999 for i in after)
    # Nothing left to do under the same input.
    assert _run(migrated_db, context).vectors_written == 0


def test_reuse_keys_on_the_embedding_input(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    for folder, title in (("a", "Lab notebook"), ("b", "Meeting minutes")):
        (root / folder).mkdir(parents=True)
        # The same paragraph under two titles: one text, two inputs.
        (root / folder / "note.md").write_text(f"# {title}\n\n{PARAGRAPH * 3}\n")
    (root / "a" / "copy.md").write_text(f"# Lab notebook\n\n{PARAGRAPH * 3}\n")
    config = _config(llama, root, "context")
    run_ingest(migrated_db, config, "notes")
    report = _run(migrated_db, config)
    rows = list(_vectors(migrated_db).values())
    body = [row for row in rows if row["text"].startswith("The reference board")]
    assert len(body) == 3 and len({row["text"] for row in body}) == 1
    by_title = {}
    for row in body:
        by_title.setdefault(row["title"], []).append(row)
    # The copy under the same title shares its input, and so its vector; the other title's
    # chunk with the very same text was embedded for itself.
    lab, minutes = by_title["Lab notebook"], by_title["Meeting minutes"]
    assert lab[0]["input_sha256"] == lab[1]["input_sha256"] != minutes[0]["input_sha256"]
    assert np.allclose(lab[0]["embedding"], lab[1]["embedding"])
    assert not np.allclose(lab[0]["embedding"], minutes[0]["embedding"])
    assert report.vectors_reused >= 2  # the copy's title chunk and body chunk
