"""Embedding backfill against the real llama-server (MiniLM, pooled SmolLM2) and PostgreSQL."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from garage.config import GarageConfig
from garage.embed import DimensionMismatch, RegistryError, embed, register_models
from garage.embed.backfill import estimate_tokens
from garage.embed.registry import registered_models, table_dimensions
from garage.inference import EgressGuard, InferenceClient
from garage.inference.model_key import auth_headers, load_key
from tests.conftest import LlamaServers, llama_config
from tests.integration.ingest_helpers import run_ingest
from tests.material import material

ROOT = Path(__file__).resolve().parents[2]
DOCS = "python3.11-doc/usr/share/doc/python3.11-doc/html/_sources"


def _tutorial(root: Path, names: list[str]) -> Path:
    """Real prose: pages of the Python tutorial, as reStructuredText."""
    root.mkdir(parents=True, exist_ok=True)
    docs = material("python3.11-doc") / DOCS.split("/", 1)[1] / "tutorial"
    for name in names:
        shutil.copy(docs / f"{name}.rst.txt", root / f"{name}.txt")
    return root


def _config(
    llama: LlamaServers, root: Path, *, two_models: bool = False, **extra: Any
) -> GarageConfig:
    sources = [{"name": "docs", "roots": [str(root)]}]
    return llama_config(llama, two_models=two_models, sources=sources, **extra)


def _client(config: GarageConfig) -> InferenceClient:
    return InferenceClient(EgressGuard.from_config(config))


def _count(url: str, query: str, *params: Any) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(query, params).fetchone()
        assert row is not None
        return int(row[0])


def test_backfill_fills_every_text_chunk_and_skips_images(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    root = _tutorial(tmp_path / "docs", ["appetite", "interpreter"])
    config = _config(llama, root)
    run_ingest(migrated_db, config, "docs")
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        # A picture's chunk, as image ingest stores it: text models must leave it alone.
        doc_id = conn.execute("SELECT min(id) FROM documents").fetchone()[0]  # type: ignore[index]
        conn.execute(
            "INSERT INTO chunks (document_id, ord, text, text_sha256, start_offset, end_offset,"
            " chunker, modality) VALUES (%s, 9999, 'IMG_0042.jpg 2024-05-01', 'x', 0, 0,"
            " 'image', 'image')",
            (doc_id,),
        )
        text_chunks = conn.execute(
            "SELECT count(*) FROM chunks WHERE modality = 'text'"
        ).fetchone()[0]  # type: ignore[index]
        with _client(config) as client:
            [report] = embed(conn, client, config)
            assert report.pending == text_chunks > 5
            assert report.vectors_written == text_chunks
            assert report.skipped_modality == 1
            assert any("no image embedding model is configured" in n for n in report.notes)
            [again] = embed(conn, client, config)
            assert again.vectors_written == 0 and again.pending == 0
    assert _count(migrated_db, "SELECT count(*) FROM emb_all_minilm_l6_v2") == text_chunks
    assert (
        _count(
            migrated_db,
            "SELECT count(*) FROM emb_all_minilm_l6_v2 e JOIN chunks c ON c.id = e.chunk_id"
            " WHERE c.modality = 'image'",
        )
        == 0
    )
    # Real vectors: the nearest chunk to a question about the interpreter is from that page.
    with psycopg.connect(migrated_db) as conn, _client(config) as client:
        [query] = client.embed(
            "llama_server",
            llama.embed_url,
            llama.embed_model,
            ["How do I start the Python interpreter and exit it?"],
        ).vectors
        row = conn.execute(
            "SELECT d.uri FROM emb_all_minilm_l6_v2 e JOIN chunks c ON c.id = e.chunk_id"
            " JOIN documents d ON d.id = c.document_id ORDER BY e.embedding <=> %s::vector LIMIT 1",
            ("[" + ",".join(map(str, query)) + "]",),
        ).fetchone()
    assert row is not None and row[0].endswith("interpreter.txt")


def test_each_model_owns_a_table(migrated_db: str, llama: LlamaServers, tmp_path: Path) -> None:
    root = _tutorial(tmp_path / "docs", ["appetite"])
    config = _config(llama, root, two_models=True)
    run_ingest(migrated_db, config, "docs")
    with psycopg.connect(migrated_db, autocommit=True) as conn, _client(config) as client:
        reports = embed(conn, client, config)
        models = {m.name: m for m in registered_models(conn)}
        assert {m.table for m in models.values()} == {
            "emb_all_minilm_l6_v2",
            "emb_smollm2_135m_embed",
        }
        assert table_dimensions(conn, models["all-minilm-l6-v2"]) == 384
        assert table_dimensions(conn, models["smollm2-135m-embed"]) == 576
        assert models["all-minilm-l6-v2"].is_default and not models["smollm2-135m-embed"].is_default
        assert [r.vectors_written for r in reports] == [reports[0].pending] * 2
        # Deleting a document cascades into both tables.
        conn.execute("DELETE FROM documents")
        for table in ("emb_all_minilm_l6_v2", "emb_smollm2_135m_embed"):
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0  # type: ignore[index]
        # The HNSW index exists on each.
        indexes = {
            r[0]
            for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE indexdef LIKE '%%hnsw%%'"
                " AND tablename LIKE 'emb\\_%%'"
            )
        }
        assert indexes == {"emb_all_minilm_l6_v2_hnsw", "emb_smollm2_135m_embed_hnsw"}


def test_edit_near_the_end_reembeds_only_changed_chunks(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    root = _tutorial(tmp_path / "docs", ["controlflow"])
    config = _config(llama, root)
    run_ingest(migrated_db, config, "docs")
    with psycopg.connect(migrated_db, autocommit=True) as conn, _client(config) as client:
        [first] = embed(conn, client, config)
        assert first.vectors_written > 20
        page = root / "controlflow.txt"
        page.write_text(page.read_text() + "\nA closing remark about loops, added later.\n")
        report = run_ingest(migrated_db, config, "docs")
        assert report.indexed == 1
        [second] = embed(conn, client, config)
        assert second.vectors_written == report.chunks_new <= 2
        total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]  # type: ignore[index]
        assert conn.execute("SELECT count(*) FROM emb_all_minilm_l6_v2").fetchone()[0] == total  # type: ignore[index]


def test_a_copied_folder_is_embedded_without_a_model_request(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    """The same text under the same model is the same vector: a backup copy of an embedded
    folder, and a page repeated inside one batch, cost no model call."""
    root = _tutorial(tmp_path / "docs", ["appetite", "interpreter"])
    config = _config(llama, root)
    run_ingest(migrated_db, config, "docs")
    requests: list[int] = []
    real = httpx.HTTPTransport()

    def counting(request: httpx.Request) -> httpx.Response:
        # A counting wrapper around the real transport to the real llama-server.
        if request.url.path.endswith("/embeddings"):
            requests.append(len(json.loads(request.content)["input"]))
        return real.handle_request(request)

    client = InferenceClient(
        EgressGuard.from_config(config), transport=httpx.MockTransport(counting)
    )
    with psycopg.connect(migrated_db, autocommit=True) as conn, client:
        [first] = embed(conn, client, config)
        assert first.vectors_written > 5 and first.vectors_reused == 0
        sent_first = sum(requests)
        assert sent_first == first.vectors_written
        shutil.copytree(root, root / "backup")
        (root / "backup" / "again.txt").write_text((root / "appetite.txt").read_text())
        report = run_ingest(migrated_db, config, "docs")
        assert report.indexed == 3
        requests.clear()
        [second] = embed(conn, client, config)
        assert requests == []  # not one embedding request
        copies = _count(
            migrated_db,
            "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE d.uri LIKE %s",
            "%/backup/%",
        )
        assert second.vectors_written == second.vectors_reused == copies > first.vectors_written
        # Each copy holds the very vector of its original.
        different = _count(
            migrated_db,
            "SELECT count(*) FROM chunks a JOIN chunks b ON a.text_sha256 = b.text_sha256"
            " JOIN emb_all_minilm_l6_v2 ea ON ea.chunk_id = a.id"
            " JOIN emb_all_minilm_l6_v2 eb ON eb.chunk_id = b.id"
            " WHERE ea.embedding <> eb.embedding",
        )
        assert different == 0


def test_requests_are_sized_in_tokens(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    """Each embedding request stays within the token budget (counted by the real server's
    tokenizer), so an abandoned request is short; the estimate never undercounts."""
    root = _tutorial(tmp_path / "docs", ["controlflow"])
    code = material("libpython3.11-testsuite") / "usr/lib/python3.11/test"
    shutil.copy(code / "test_base64.py", root / "test_base64.py")
    budget = 1024
    config = _config(llama, root)
    embedding = config.embedding.model_copy(update={"batch_tokens": budget})
    config = config.model_copy(update={"embedding": embedding})
    assert config.embedding.batch_tokens == budget
    run_ingest(migrated_db, config, "docs")
    requests: list[list[str]] = []
    real = httpx.HTTPTransport()

    def counting(request: httpx.Request) -> httpx.Response:
        # A recording wrapper around the real transport to the real llama-server.
        if request.url.path.endswith("/embeddings"):
            requests.append(json.loads(request.content)["input"])
        return real.handle_request(request)

    client = InferenceClient(
        EgressGuard.from_config(config), transport=httpx.MockTransport(counting)
    )
    headers = auth_headers("llama_server", llama.embed_url, load_key())
    with (
        psycopg.connect(migrated_db, autocommit=True) as conn,
        client,
        httpx.Client(base_url=llama.embed_url, headers=headers, timeout=60) as server,
    ):
        [report] = embed(conn, client, config)
        # At least one input a chunk (a chunk over the model's context is sent again, cut).
        assert sum(len(r) for r in requests) >= report.vectors_written > 20

        def tokens(text: str) -> int:
            return len(server.post("/tokenize", json={"content": text}).json()["tokens"])

        real_sizes = [sum(tokens(t) for t in request) for request in requests]
        assert len(requests) > 3
        assert all(
            size <= budget for size, r in zip(real_sizes, requests, strict=True) if len(r) > 1
        )
        for request in requests:
            for text in request:
                assert estimate_tokens(text) >= tokens(text), text[:80]


def test_long_chunk_is_truncated_and_recorded(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    root = _tutorial(tmp_path / "docs", ["appetite"])
    config = _config(llama, root)
    run_ingest(migrated_db, config, "docs")
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        doc_id = conn.execute("SELECT min(id) FROM documents").fetchone()[0]  # type: ignore[index]
        # ~3,000 tokens: six times MiniLM's 512-token context.
        long_text = " ".join(f"identifier_{i}" for i in range(600))
        conn.execute(
            "INSERT INTO chunks (document_id, ord, text, text_sha256, start_offset, end_offset,"
            " chunker) VALUES (%s, 5000, %s, 'x', 0, 0, 'recursive:1000/100')",
            (doc_id, long_text),
        )
        with _client(config) as client:
            [report] = embed(conn, client, config)
        assert report.truncated == 1
        assert report.vectors_written == report.pending
        rows = conn.execute(
            "SELECT c.ord FROM emb_all_minilm_l6_v2 e JOIN chunks c ON c.id = e.chunk_id"
            " WHERE e.truncated"
        ).fetchall()
        assert rows == [(5000,)]


def test_dimension_mismatch_and_incompatible_reregistration(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    root = _tutorial(tmp_path / "docs", ["appetite"])
    good = _config(llama, root)
    run_ingest(migrated_db, good, "docs")
    raw = good.model_dump()
    raw["embedding"]["models"][0]["dimensions"] = 100
    raw["embedding"]["models"][0]["name"] = "wrong-dims"
    raw["embedding"]["default"] = "wrong-dims"
    wrong = GarageConfig.model_validate(raw)
    with psycopg.connect(migrated_db, autocommit=True) as conn, _client(wrong) as client:
        with pytest.raises(
            DimensionMismatch, match="returned 384-dimension vectors; the registry says 100"
        ):
            embed(conn, client, wrong)
        assert conn.execute("SELECT count(*) FROM emb_wrong_dims").fetchone()[0] == 0  # type: ignore[index]
        register_models(conn, good)
        changed = good.model_dump()
        changed["embedding"]["models"][0]["dimensions"] = 768
        with pytest.raises(RegistryError, match="registered with dimensions 384"):
            register_models(conn, GarageConfig.model_validate(changed))


def test_communications_never_reach_a_non_loopback_host(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    """With a model host off this machine, communications are skipped and counted, and every
    other chunk is still embedded (the backfill does not stop at the first mail)."""
    mail = tmp_path / "mail"
    mail.mkdir()
    secret = "Dear Ana, the contract is attached. Kind regards, Ben. "
    (mail / "note.txt").write_text(secret * 5)
    notes = _tutorial(tmp_path / "notes", ["appetite", "interpreter"])
    remote = "http://192.0.2.10:8080"  # TEST-NET-1: never routed
    config = GarageConfig.model_validate(
        {
            "sources": [
                {"name": "inbox", "roots": [str(mail)], "corpus_class": "communication"},
                {"name": "notes", "roots": [str(notes)]},
            ],
            "embedding": {
                "default": "remote",
                "models": [
                    {
                        "name": "remote",
                        "provider": "llama_server",
                        "host": remote,
                        "model": "all-minilm-l6-v2",
                        "dimensions": 384,
                    }
                ],
            },
        }
    )
    run_ingest(migrated_db, config, "inbox")
    run_ingest(migrated_db, config, "notes")
    sent: list[str] = []
    real = httpx.Client(base_url=llama.embed_url, timeout=120)

    def lan_host(request: httpx.Request) -> httpx.Response:
        # A fake of the network to a LAN model host, written to its one contract: the request
        # is answered by the real llama-server on loopback, so nothing leaves this machine.
        body = json.loads(request.content)
        if any(secret.strip() in text for text in body["input"]):
            pytest.fail(f"a communication was about to be sent to {request.url}")
        sent.extend(body["input"])
        # That host's server holds its own key; Garage never sends the local one off loopback.
        assert "authorization" not in request.headers
        headers = dict(request.headers) | auth_headers("llama_server", llama.embed_url, load_key())
        answer = real.post(request.url.path, content=request.content, headers=headers)
        return httpx.Response(answer.status_code, content=answer.content)

    transport = httpx.MockTransport(lan_host)
    client = InferenceClient(EgressGuard.from_config(config), transport=transport)
    with psycopg.connect(migrated_db, autocommit=True) as conn, client, real:
        [report] = embed(conn, client, config)
        mail_chunks = _count(
            migrated_db,
            "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id"
            " WHERE d.corpus_class = 'communication'",
        )
        note_chunks = _count(migrated_db, "SELECT count(*) FROM chunks") - mail_chunks
        assert (report.skipped_egress, report.vectors_written) == (mail_chunks, note_chunks)
        assert mail_chunks >= 1 and len(sent) == note_chunks
        assert any("communication chunks were not sent" in note for note in report.notes)
        assert _count(migrated_db, "SELECT count(*) FROM emb_remote") == note_chunks


def test_killed_backfill_resumes_without_duplicates(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    root = _tutorial(tmp_path / "docs", ["controlflow", "datastructures", "classes"])
    config = _config(llama, root)
    raw = config.model_dump()
    raw["embedding"]["batch_size"] = 8  # commit often, so the kill lands mid-run
    raw["database"]["url"] = migrated_db
    config_file = tmp_path / "garage.json"
    config_file.write_text(json.dumps(raw))
    config = GarageConfig.model_validate(raw)
    run_ingest(migrated_db, config, "docs")
    total = _count(migrated_db, "SELECT count(*) FROM chunks")
    assert total > 100
    env = dict(os.environ, GARAGE_CONFIG=str(config_file), GARAGE_DATA_DIR=str(tmp_path / "data"))
    command = [sys.executable, "-m", "garage.cli", "embed", "--json"]
    process = subprocess.Popen(
        command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    written = 0
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
        try:
            written = _count(migrated_db, "SELECT count(*) FROM emb_all_minilm_l6_v2")
        except psycopg.errors.UndefinedTable:
            continue
        if written >= 16:
            break
    assert process.poll() is None, "the backfill finished before it could be interrupted"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    after_kill = _count(migrated_db, "SELECT count(*) FROM emb_all_minilm_l6_v2")
    assert 16 <= after_kill < total
    rerun = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    [report] = json.loads(rerun.stdout)
    assert report["vectors_written"] == total - after_kill
    assert _count(migrated_db, "SELECT count(*) FROM emb_all_minilm_l6_v2") == total
    assert _count(migrated_db, "SELECT count(DISTINCT chunk_id) FROM emb_all_minilm_l6_v2") == total
