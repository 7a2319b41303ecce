"""Search latency benchmark: hybrid vs vector-only vs keyword-only, at 100,000 chunks or more.

    .venv/bin/python bench/search.py [--chunks 100000] [--queries 200] [--frequent-queries 40]
                                     [--database-url URL] [--keep] [--load-only] [--no-vacuum]
                                     [--reuse DBNAME] [--base-vectors 2000]
                                     [--maintenance-work-mem MB] [--derived-queries 40]
                                     [--ingest-chunks 2000] [--host http://127.0.0.1:18080]
                                     [--model all-minilm-l6-v2] [--fusions rrf,convex]
                                     [--save RUN.json] [--note TEXT]
    .venv/bin/python bench/search.py --combine RUN.json,RUN.json,...

Prints p50/p95 of ``garage.search`` for each mode side by side (hybrid once per fusion in
``--fusions``, interleaved query by query so a busy machine slows them alike), end to end
(the query embedded through the inference client, the one SQL statement, the hits built) and
database only (the same statement with the query's vector computed beforehand), and the ratio
hybrid / max(vector, keyword); then p50/p95/p99/max per query class: phrases, a rare word,
common longer words, and ``--frequent-queries`` of 2-4 of the 50 lexemes found in the most
chunks, the class where a keyword leg that reads every posting of its terms is slowest.
Targets at 1,000,000 chunks on two cores: hybrid p50 <= 60 ms, p95 <= 200 ms, and no query of
any class slower than 1 s.

What the index costs: bytes on disk per chunk (the chunks' rows and TOAST, their indexes,
bm25_postings and its indexes, the vectors and their HNSW index), and what loading took — the
chunks' COPY (with the bm25 triggers on), the vectors' COPY, the HNSW build with the
maintenance_work_mem it had (sized from the vectors unless given) and whether the graph fit,
and VACUUM ANALYZE. The load's figures are kept as the database's comment, so ``--reuse``
reports them too. Each run is saved as JSON; ``--combine`` prints saved runs side by side,
smallest first, so the growth from 100,000 to 1,000,000 chunks shows.

It also answers the BM25 question of schema/004_bm25.sql: statistics kept by triggers in the
chunk's transaction, or derived at query time? It prints (a) the ingest cost of the triggers —
the same new chunks stored through ``store_document`` with the bm25 triggers enabled and
disabled, alternately — and (b) keyword latency over the maintained postings against
``bm25_derived`` (tf and dl from ``unnest(tsv)`` of the matching chunks, N and avgdl from all
chunks; it takes seconds a query at 100k, hence ``--derived-queries``; 0 skips it), side by
side with a one-line conclusion.

The corpus: every chunk's text is a real prose window of the Python documentation (Debian
``python3.11-doc``'s reST sources when cached under ~/.cache/garage/material, else the standard
library's sources) at a random offset with a varied length, cut at whitespace, one document
per source file. Vectors: embedding 100,000 chunks with MiniLM on two cores takes hours, so
``--base-vectors`` chunks are embedded for real through llama-server (cached by text hash
under ~/.cache/garage/bench/, so reruns are fast) and every other chunk gets a blend of the
two real vectors nearest it in the same file plus small Gaussian noise, normalized: distinct
vectors, with the neighbourhood structure of real text. The 200 queries are phrases of 2-8
words, rare terms and common terms drawn from the same text, embedded for real.

Chunks are loaded with COPY into the real tables of the migrations, with their triggers on;
the model's ``emb_<slug>`` table is created by ``register_models``, its HNSW index dropped for
the bulk load and re-created afterwards from the very definition the registry made. The
database is a fresh one on the given server (default: the embedded one), dropped afterwards
unless ``--keep``; ``--reuse NAME`` measures a kept one again without loading, and
``--no-vacuum`` measures a load with only what autovacuum did by then.
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import os
import re
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import add_model_arguments, bench_config, with_database  # noqa: E402
from garage.config import GarageConfig  # noqa: E402
from garage.db import resolve_url, scalar  # noqa: E402
from garage.db.migrate import ensure_migrated  # noqa: E402
from garage.embed import backlog, register_models  # noqa: E402
from garage.embed.registry import RegisteredModel, configured_models, default_model  # noqa: E402
from garage.inference import EgressGuard, InferenceClient  # noqa: E402
from garage.ingest.store import DocumentRecord, NewChunk, sha256_text, store_document  # noqa: E402
from garage.search import SearchQuery, hybrid, search  # noqa: E402
from garage.search import filters as search_filters  # noqa: E402

CACHE = Path.home() / ".cache/garage/bench"
DOCS = Path.home() / ".cache/garage/material/python3.11-doc"
CHUNKER = "recursive:1000/100"
NOISE = 0.02  # per dimension; a unit 384-d vector has components of about 0.05
WARMUP = 20
BM25_TRIGGERS = ("chunks_bm25_insert", "chunks_bm25_delete", "chunks_bm25_update")
PROBE_SOURCE = "bench-ingest-probe"

_started = time.perf_counter()


def stage(message: str) -> None:
    print(f"[{time.perf_counter() - _started:7.1f}s] {message}", flush=True)


@contextmanager
def timed(what: str) -> Iterator[None]:
    stage(f"{what} ...")
    began = time.perf_counter()
    yield
    stage(f"{what}: done in {time.perf_counter() - began:.1f}s")


# -- real text ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceFile:
    name: str
    text: str


@dataclass(frozen=True)
class Window:
    file: int
    start: int
    end: int


def real_files() -> list[SourceFile]:
    paths = sorted(DOCS.rglob("*.rst.txt"))
    if not paths:
        paths = sorted(Path(os.__file__).parent.rglob("*.py"))[:2000]
    files = [SourceFile(str(p), p.read_text(errors="replace")) for p in paths]
    return [f for f in files if len(f.text.strip()) >= 200]


class Corpus:
    """The files laid end to end, so a random offset picks files in proportion to their size."""

    def __init__(self, files: list[SourceFile]):
        self.files = files
        self.starts = list(np.cumsum([0] + [len(f.text) for f in files[:-1]]))
        self.total = sum(len(f.text) for f in files)

    def text(self, window: Window) -> str:
        return self.files[window.file].text[window.start : window.end]

    def center(self, window: Window) -> int:
        return int(self.starts[window.file]) + (window.start + window.end) // 2

    def windows(self, count: int, seed: int, exclude: frozenset[str] = frozenset()) -> list[Window]:
        """``count`` distinct windows of 200-1,200 characters (most near 900), cut at spaces."""
        rng = np.random.default_rng(seed)
        seen = set(exclude)
        out: list[Window] = []
        while len(out) < count:
            position = int(rng.integers(0, self.total))
            index = bisect.bisect_right(self.starts, position) - 1
            text = self.files[index].text
            length = int(np.clip(rng.normal(900, 220), 200, 1200))
            start = max(0, min(position - int(self.starts[index]), len(text) - length))
            start = _after_space(text, start)
            end = _before_space(text, min(len(text), start + length))
            if end - start < 120:
                continue
            window = Window(index, start, end)
            digest = self.text(window)
            if digest in seen:
                continue
            seen.add(digest)
            out.append(window)
        return out


def _after_space(text: str, i: int) -> int:
    if i == 0:
        return 0
    match = re.compile(r"\s+").search(text, i)
    return match.end() if match else i


def _before_space(text: str, i: int) -> int:
    if i >= len(text):
        return len(text)
    j = text.rfind(" ", 0, i)
    return j if j > 0 else i


WORD = re.compile(r"[A-Za-z][A-Za-z]+")


PHRASE, RARE, COMMON, FREQUENT = "phrase", "rare word", "common words", "most frequent"


def make_queries(corpus: Corpus, count: int, seed: int) -> list[str]:
    return [text for text, _ in make_tagged_queries(corpus, count, seed)]


def make_tagged_queries(corpus: Corpus, count: int, seed: int) -> list[tuple[str, str]]:
    """Phrases of 2-8 consecutive words (60 %), a rare word with a neighbour (20 %), and two or
    three of the most common longer words (20 %), each with its class. Ones with no searchable
    term are redrawn by the caller's check."""
    rng = np.random.default_rng(seed)
    words_per_file = [WORD.findall(f.text) for f in corpus.files]
    in_files: Counter[str] = Counter()
    frequency: Counter[str] = Counter()
    for words in words_per_file:
        lower = [w.lower() for w in words]
        frequency.update(lower)
        in_files.update(set(lower))
    rare = sorted(w for w, n in in_files.items() if n <= 2 and len(w) >= 6 and frequency[w] <= 3)
    common = [w for w, _ in frequency.most_common(600) if len(w) >= 5][:200]
    queries: list[tuple[str, str]] = []
    while len(queries) < count:
        kind = rng.random()
        words = words_per_file[int(rng.integers(0, len(words_per_file)))]
        if kind < 0.6 and len(words) > 10:
            size = int(rng.integers(2, 9))
            at = int(rng.integers(0, len(words) - size))
            query, label = " ".join(words[at : at + size]), PHRASE
        elif kind < 0.8:
            word = rare[int(rng.integers(0, len(rare)))]
            query = word if rng.random() < 0.5 else f"{word} {common[int(rng.integers(0, 50))]}"
            label = RARE
        else:
            picks = rng.choice(len(common), size=int(rng.integers(2, 4)), replace=False)
            query, label = " ".join(common[int(i)] for i in picks), COMMON
        if query.lower() not in (q.lower() for q, _ in queries):
            queries.append((query, label))
    return queries


def frequent_queries(
    conn: psycopg.Connection[Any], texts: list[str], count: int, seed: int
) -> list[str]:
    """``count`` queries of 2-4 of the 50 lexemes found in the most of ``texts`` (stop words are
    no lexemes): the words whose postings are a large share of the index, where a keyword leg
    that reads every posting of every term is at its slowest. The lexemes are the query's words
    as they are: words of letters whose lexeme is themselves (a stem such as "modul" is)."""
    rows = conn.execute(
        "SELECT lexeme FROM unnest(%s::text[]) t(text),"
        " unnest(to_tsvector('english', t.text)) v"
        " WHERE lexeme ~ '^[a-z]+$'"
        " GROUP BY lexeme"
        " HAVING tsvector_to_array(to_tsvector('english', lexeme)) = ARRAY[lexeme]"
        " ORDER BY count(*) DESC, lexeme LIMIT 50",
        (texts,),
    ).fetchall()
    top = [r[0] for r in rows]
    rng = np.random.default_rng(seed)
    out: list[str] = []
    while len(out) < count:
        picks = rng.choice(len(top), size=int(rng.integers(2, 5)), replace=False)
        query = " ".join(top[int(i)] for i in sorted(picks))
        if query not in out:
            out.append(query)
    return out


# -- real vectors ---------------------------------------------------------------------------


def embed_texts(
    client: InferenceClient, model: RegisteredModel, texts: list[str]
) -> list[list[float]]:
    provider: Any = model.provider  # registry rows hold the provider as text
    return client.embed(provider, model.host, model.model_id, texts).vectors


class VectorCache:
    """Real vectors by sha256 of the text, one file per model, so reruns skip llama-server."""

    def __init__(self, model_id: str, dimensions: int):
        self.path = CACHE / f"vectors-{re.sub(r'[^a-z0-9]+', '_', model_id.lower())}.npz"
        self.dimensions = dimensions
        self.vectors: dict[str, np.ndarray] = {}
        if self.path.exists():
            data = np.load(self.path)
            self.vectors = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))

    def embed(
        self, client: InferenceClient, model: RegisteredModel, texts: list[str]
    ) -> np.ndarray:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        missing = sorted(
            {k: t for k, t in zip(keys, texts, strict=True) if k not in self.vectors}.items()
        )
        if missing:
            stage(f"embedding {len(missing)} texts for real with {model.model_id} (cached after)")
            began = time.perf_counter()
            for i in range(0, len(missing), 32):
                batch = missing[i : i + 32]
                vectors = embed_texts(client, model, [t for _, t in batch])
                for (key, _), vector in zip(batch, vectors, strict=True):
                    self.vectors[key] = np.asarray(vector, dtype=np.float32)
                done = i + len(batch)
                if done % 320 == 0 or done == len(missing):
                    rate = done / (time.perf_counter() - began)
                    stage(f"  embedded {done}/{len(missing)} ({rate:.1f}/s)")
                    self.save()
        matrix = np.stack([self.vectors[k] for k in keys])
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    def save(self) -> None:
        CACHE.mkdir(parents=True, exist_ok=True)
        keys = list(self.vectors)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
        tmp.replace(self.path)


def derived_vectors(
    corpus: Corpus, base: list[Window], base_vectors: np.ndarray, others: list[Window], seed: int
) -> np.ndarray:
    """Each other window: the real vectors of the base windows on either side of it in the same
    file, blended by distance, plus Gaussian noise, normalized."""
    rng = np.random.default_rng(seed)
    order = sorted(range(len(base)), key=lambda i: corpus.center(base[i]))
    centers = [corpus.center(base[i]) for i in order]
    out = np.empty((len(others), base_vectors.shape[1]), dtype=np.float32)
    for n, window in enumerate(others):
        c = corpus.center(window)
        right = min(bisect.bisect_left(centers, c), len(order) - 1)
        left = max(right - 1, 0)
        li, ri = order[left], order[right]
        same = [i for i in (li, ri) if base[i].file == window.file] or [
            li if abs(centers[left] - c) <= abs(centers[right] - c) else ri
        ]
        if len(same) == 2 and centers[right] != centers[left]:
            t = min(max((c - centers[left]) / (centers[right] - centers[left]), 0.0), 1.0)
            vector = (1 - t) * base_vectors[li] + t * base_vectors[ri]
        else:
            vector = base_vectors[same[0]].copy()
        vector += rng.normal(0, NOISE, vector.shape)
        out[n] = vector / np.linalg.norm(vector)
    return out


# -- loading --------------------------------------------------------------------------------


def hnsw_memory(count: int, dimensions: int) -> int:
    """maintenance_work_mem, in MB, for building HNSW over ``count`` vectors in memory.

    pgvector keeps the whole graph in maintenance_work_mem while it fits, and once it does not
    it says so in a NOTICE and goes on inserting into the index on disk, far slower. The graph
    holds each vector (4 bytes a dimension) and its neighbour lists: twice the raw floats, at
    least the 1 GB this bench always used, rounded up to a whole GB."""
    need = 2 * count * dimensions * 4
    return max(1024, -(-need // 2**30) * 1024)


@dataclass(frozen=True)
class LoadFigures:
    """What loading cost, kept as the database's comment so ``--reuse`` reports it too."""

    chunks: int
    chunk_copy_seconds: float
    vector_copy_seconds: float
    hnsw_seconds: float
    maintenance_work_mem_mb: int
    hnsw_spilled: bool
    hnsw_peak_rss_mb: float
    vacuum_analyze_seconds: float | None

    def save(self, conn: psycopg.Connection[Any], name: str) -> None:
        conn.execute(
            sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                sql.Identifier(name), sql.Literal(json.dumps(asdict(self)))
            )
        )

    @classmethod
    def read(cls, conn: psycopg.Connection[Any]) -> LoadFigures | None:
        comment = scalar(
            conn,
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database"
            " WHERE datname = current_database()",
        )
        if not comment:
            return None
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in json.loads(comment).items() if k in known})


def backend_peak_rss_mb(conn: psycopg.Connection[Any]) -> float:
    """The backend's peak resident memory (VmHWM), when the server runs on this machine; a
    parallel build's graph lives in shared memory the leader touches, so it shows here too."""
    pid = scalar(conn, "SELECT pg_backend_pid()")
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return float("nan")
    match = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(match.group(1)) / 1024 if match else float("nan")


def load(
    url: str,
    config: GarageConfig,
    corpus: Corpus,
    windows: list[Window],
    vectors: np.ndarray,
    *,
    maintenance_work_mem_mb: int | None = None,
    vacuum: bool = True,
) -> LoadFigures:
    """The chunks and their vectors into ``url``'s tables (``maintenance_work_mem_mb`` for the
    HNSW build: by default sized from the vectors), what it took."""
    maintenance_work_mem_mb = maintenance_work_mem_mb or hnsw_memory(*vectors.shape)
    with psycopg.connect(url, autocommit=True) as conn:
        [model] = register_models(conn, config)
        # The registry's own index definitions, to re-create verbatim after the bulk load:
        # building HNSW once over 100k vectors is far faster than 100k incremental inserts.
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s AND indexname <> %s",
            (model.table, f"{model.table}_pkey"),
        ).fetchall()
        for name, _ in indexes:
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))

        by_file: dict[int, list[int]] = {}
        for i, window in enumerate(windows):
            by_file.setdefault(window.file, []).append(i)
        with timed(
            f"storing {len(by_file)} documents and {len(windows)} chunks (COPY, bm25 triggers on)"
        ):
            with conn.transaction():
                source_id = conn.execute(
                    "INSERT INTO sources (name, kind, corpus_class, roots)"
                    " VALUES ('python-docs', 'files', 'document', %s) RETURNING id",
                    ([str(DOCS)],),
                ).fetchone()[0]  # type: ignore[index]
                document_ids: dict[int, int] = {}
                for file in sorted(by_file):
                    f = corpus.files[file]
                    document_ids[file] = conn.execute(
                        "INSERT INTO documents (source_id, uri, corpus_class, title, content,"
                        " source_sha256, content_sha256, size_bytes, mtime_ns, extractor,"
                        " extractor_version) VALUES (%s, %s, 'document', %s, %s, %s, %s, %s,"
                        " 0, 'text', 1) RETURNING id",
                        (
                            source_id,
                            Path(f.name).as_uri(),
                            Path(f.name).name.removesuffix(".rst.txt"),
                            f.text,
                            sha256_text(f.text),
                            sha256_text(f.text),
                            len(f.text.encode()),
                        ),
                    ).fetchone()[0]  # type: ignore[index]
            # Chunk ids are given (1..N) so that vector i belongs to chunk i + 1.
            rows: list[tuple[Any, ...]] = []
            for file, members in by_file.items():
                members.sort(key=lambda i: windows[i].start)
                for ord_, i in enumerate(members):
                    w = windows[i]
                    text = corpus.text(w)
                    rows.append(
                        (
                            i + 1,
                            document_ids[file],
                            ord_,
                            text,
                            sha256_text(text),
                            w.start,
                            w.end,
                            CHUNKER,
                        )
                    )
            rows.sort()
            copy_began = time.perf_counter()
            batch = 5000
            for at in range(0, len(rows), batch):
                with (
                    conn.transaction(),
                    conn.cursor().copy(
                        "COPY chunks (id, document_id, ord, text, text_sha256, start_offset,"
                        " end_offset, chunker) FROM STDIN"
                    ) as copy,
                ):
                    for row in rows[at : at + batch]:
                        copy.write_row(row)
                if (at // batch) % 20 == 19 or at + batch >= len(rows):
                    done = min(at + batch, len(rows))
                    rate = done / (time.perf_counter() - copy_began)
                    stage(f"  chunks {done}/{len(rows)} ({rate:.0f}/s)")
            chunk_copy_seconds = time.perf_counter() - copy_began
            conn.execute("SELECT setval('chunks_id_seq', %s)", (len(rows),))

        register_vector(conn)
        began = time.perf_counter()
        with timed(f"storing {len(vectors)} vectors in {model.table} (COPY)"):
            with conn.cursor().copy(
                sql.SQL("COPY {} (chunk_id, embedding) FROM STDIN WITH (FORMAT BINARY)").format(
                    sql.Identifier(model.table)
                )
            ) as copy:
                copy.set_types(["int8", "vector"])
                for i, vector in enumerate(vectors):
                    copy.write_row((i + 1, vector))
        vector_copy_seconds = time.perf_counter() - began
        notices: list[str] = []
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        began = time.perf_counter()
        with timed(
            f"building {model.table}'s index as the registry defines it"
            f" (maintenance_work_mem {maintenance_work_mem_mb} MB)"
        ):
            conn.execute(
                sql.SQL("SET maintenance_work_mem = {}").format(
                    sql.Literal(f"{maintenance_work_mem_mb}MB")
                )
            )
            for _, definition in indexes:
                conn.execute(definition)  # type: ignore[arg-type]
        hnsw_seconds = time.perf_counter() - began
        for notice in notices:
            stage(f"  NOTICE: {notice}")
        vacuum_seconds = None
        if vacuum:
            began = time.perf_counter()
            with timed("VACUUM ANALYZE (what autovacuum would have done by now)"):
                conn.execute("VACUUM ANALYZE")
            vacuum_seconds = time.perf_counter() - began
        return LoadFigures(
            chunks=len(windows),
            chunk_copy_seconds=chunk_copy_seconds,
            vector_copy_seconds=vector_copy_seconds,
            hnsw_seconds=hnsw_seconds,
            maintenance_work_mem_mb=maintenance_work_mem_mb,
            hnsw_spilled=any("no longer fits" in n for n in notices),
            hnsw_peak_rss_mb=backend_peak_rss_mb(conn),
            vacuum_analyze_seconds=vacuum_seconds,
        )


# -- measuring ------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def db_only(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    model: RegisteredModel,
    mode: str,
    text: str,
    vector: list[float] | None,
    ranking: str | None = None,
) -> list[dict[str, Any]]:
    """What ``search`` does after the query's vector is known: plan, one statement, rows."""
    query = SearchQuery(text, mode=mode)  # type: ignore[arg-type]
    filters = search_filters.build(query)
    plan = hybrid.plan(
        query.mode,
        text=text,
        limit=query.limit,
        filters=filters,
        settings=config.search,
        model=model if mode != "keyword" else None,
        query_vector=vector if mode != "keyword" else None,
        keyword_ranking=ranking,
    )
    return hybrid.run(conn, plan, candidates=config.search.candidates, filtered=filters.active)


def columns(fusions: Sequence[str]) -> list[str]:
    """What is timed side by side: hybrid under each fusion (``hybrid rrf``, …), then the
    single engines."""
    return [f"hybrid {fusion}" for fusion in fusions] + ["vector", "keyword"]


def column_config(config: GarageConfig, column: str) -> tuple[str, GarageConfig]:
    mode, _, fusion = column.partition(" ")
    if fusion:
        config = config.model_copy(
            update={"search": config.search.model_copy(update={"fusion": fusion})}
        )
    return mode, config


def measure_search(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    client: InferenceClient,
    model: RegisteredModel,
    queries: list[str],
    vectors: np.ndarray,
    timed_columns: list[str],
) -> dict[tuple[str, str], list[float]]:
    timings: dict[tuple[str, str], list[float]] = {}
    configs = {column: column_config(config, column) for column in timed_columns}

    def one(i: int) -> dict[tuple[str, str], float]:
        text, vector = queries[i], vectors[i].tolist()
        out = {}
        # Rotate the order so no column always runs first (or right after the embedding).
        n = i % len(timed_columns)
        for column in timed_columns[n:] + timed_columns[:n]:
            mode, run_config = configs[column]
            began = time.perf_counter()
            response = search(conn, run_config, SearchQuery(text, mode=mode), client=client)  # type: ignore[arg-type]
            out[("end to end", column)] = (time.perf_counter() - began) * 1000
            # A degraded search (no vector) would time the wrong thing.
            assert response.mode == mode and response.degraded is None, (text, response)
            began = time.perf_counter()
            db_only(conn, run_config, model, mode, text, vector)
            out[("database", column)] = (time.perf_counter() - began) * 1000
        return out

    for i in range(min(WARMUP, len(queries))):
        one(i)
    stage(f"warmed up on {min(WARMUP, len(queries))} queries; measuring {len(queries)}")
    for i in range(len(queries)):
        for key, ms in one(i).items():
            timings.setdefault(key, []).append(ms)
        if (i + 1) % 50 == 0:
            stage(f"  {i + 1}/{len(queries)} queries")
    return timings


def measure_partial(
    conn: psycopg.Connection[Any], model: RegisteredModel, rounds: int
) -> dict[str, list[float]]:
    """What the partial note adds to a search whose vector leg ran: the lookup of the kept
    count as search makes it (one row per source, on an autocommit connection as every door's
    is), against the exact count it stands for (an anti-join over every chunk, also what the
    backfill counts when it starts). The loader wrote its vectors past the backfill, so the
    exact count comes first and leaves the kept one true."""
    timings: dict[str, list[float]] = {"kept": [], "kept, one source": [], "exact": []}
    sources = [str(scalar(conn, "SELECT min(name) FROM sources"))]
    for _ in range(3):
        began = time.perf_counter()
        backlog.count(conn, model)
        timings["exact"].append((time.perf_counter() - began) * 1000)
    for i in range(WARMUP + rounds):
        for label, scope in (("kept", []), ("kept, one source", sources)):
            began = time.perf_counter()
            backlog.pending(conn, model.name, scope)
            if i >= WARMUP:
                timings[label].append((time.perf_counter() - began) * 1000)
    return timings


def print_partial(chunks: int, partial: dict[str, list[float]]) -> None:
    print()
    print(f"the partial note at {chunks:,} chunks (ms; what it adds to a search with a vector leg)")
    for label in ("kept", "kept, one source", "exact"):
        values = partial[label]
        print(
            f"  {label + ' count':26}p50 {percentile(values, 50):8.2f}  "
            f"p95 {percentile(values, 95):8.2f}  ({len(values)} counts)"
        )


def measure_keyword_variants(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    model: RegisteredModel,
    queries: list[str],
) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {"bm25": [], "bm25_derived": []}
    for ranking in timings:
        for text in queries[:5]:
            db_only(conn, config, model, "keyword", text, None, ranking)
    for i, text in enumerate(queries):
        for ranking in timings if i % 2 == 0 else reversed(list(timings)):
            began = time.perf_counter()
            db_only(conn, config, model, "keyword", text, None, ranking)
            timings[ranking].append((time.perf_counter() - began) * 1000)
        if (i + 1) % 25 == 0:
            stage(f"  {i + 1}/{len(queries)} queries, both rankings")
    return timings


def set_bm25_triggers(conn: psycopg.Connection[Any], enabled: bool) -> None:
    action = sql.SQL("ENABLE" if enabled else "DISABLE")
    with conn.transaction():
        for trigger in BM25_TRIGGERS:
            conn.execute(
                sql.SQL("ALTER TABLE chunks {} TRIGGER {}").format(action, sql.Identifier(trigger))
            )


def measure_ingest(
    url: str, corpus: Corpus, windows: list[Window], rounds: int, per_document: int
) -> dict[str, list[float]]:
    """Chunks stored the way ingest stores them — ``store_document``, one transaction per
    document, committed — with the bm25 triggers on and off, alternately. Each round's
    documents are deleted afterwards with the triggers in the same state, so the postings stay
    exact for the searches."""
    timings: dict[str, list[float]] = {"triggers on": [], "triggers off": []}
    with psycopg.connect(url, autocommit=True) as conn:
        source_id = conn.execute(
            "INSERT INTO sources (name, kind, corpus_class) VALUES (%s, 'files', 'document')"
            " ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id",
            (PROBE_SOURCE,),
        ).fetchone()[0]  # type: ignore[index]
        try:
            for round_ in range(rounds):
                for state in timings if round_ % 2 == 0 else reversed(list(timings)):
                    enabled = state == "triggers on"
                    set_bm25_triggers(conn, enabled)
                    began = time.perf_counter()
                    for d in range(0, len(windows), per_document):
                        part = windows[d : d + per_document]
                        texts = [corpus.text(w) for w in part]
                        content = "\n".join(texts)
                        record = DocumentRecord(
                            source_id=source_id,
                            uri=f"file:///bench/ingest-probe/{round_}-{d}.txt",
                            corpus_class="document",
                            title=None,
                            content=content,
                            source_sha256=sha256_text(content),
                            content_sha256=sha256_text(content),
                            size_bytes=len(content.encode()),
                            mtime_ns=0,
                            extractor="text",
                            extractor_version=1,
                            metadata={},
                            author_id=None,
                            attribution="unknown",
                            attribution_signal=None,
                            attribution_evidence={},
                        )
                        chunks = [
                            NewChunk(n, t, w.start, w.end, None, CHUNKER)
                            for n, (t, w) in enumerate(zip(texts, part, strict=True))
                        ]
                        with conn.transaction():
                            store_document(conn, record, chunks)
                    timings[state].append(len(windows) / (time.perf_counter() - began))
                    conn.execute("DELETE FROM documents WHERE source_id = %s", (source_id,))
                    set_bm25_triggers(conn, True)
                    stage(f"  round {round_ + 1}, {state}: {timings[state][-1]:.0f} chunks/s")
        finally:
            set_bm25_triggers(conn, True)
            conn.execute("DELETE FROM sources WHERE id = %s", (source_id,))
    return timings


# -- reporting ------------------------------------------------------------------------------


CLASSES = (PHRASE, RARE, COMMON, FREQUENT)
RELATIONS = {
    "chunks (rows + TOAST)": "pg_table_size('chunks')",
    "chunks' indexes": "pg_indexes_size('chunks')",
    "bm25_postings (rows)": "pg_table_size('bm25_postings')",
    "bm25_postings' indexes": "pg_indexes_size('bm25_postings')",
    "vectors (rows + TOAST)": "pg_table_size({table})",
    "vectors' HNSW index": "pg_relation_size({hnsw})",
}


def index_sizes(conn: psycopg.Connection[Any], model: RegisteredModel) -> dict[str, int]:
    """Bytes on disk of what a chunk costs the index, relation by relation."""
    hnsw = scalar(
        conn,
        "SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexdef ILIKE '%%hnsw%%'",
        (model.table,),
    )
    out = {}
    for label, expression in RELATIONS.items():
        query = sql.SQL("SELECT " + expression).format(
            table=sql.Literal(model.table), hnsw=sql.Literal(hnsw)
        )
        out[label] = int(scalar(conn, query))
    return out


@dataclass
class Run:
    """One database's measurement, as saved with ``--save`` and read back by ``--combine``."""

    chunks: int
    queries: list[tuple[str, str]]
    timings: dict[str, list[float]]  # "end to end|hybrid convex" -> ms per query
    sizes: dict[str, int]
    load: dict[str, Any] | None = None
    ingest: dict[str, list[float]] | None = None
    keyword: dict[str, list[float]] | None = None
    bm25: dict[str, Any] | None = None
    note: str = ""

    def times(self, part: str, column: str, kind: str | None = None) -> list[float]:
        values = self.timings[f"{part}|{column}"]
        if kind is None:
            return values
        return [v for v, (_, k) in zip(values, self.queries, strict=True) if k == kind]

    @property
    def columns(self) -> list[str]:
        return list(dict.fromkeys(key.split("|")[1] for key in self.timings))

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self)))

    @classmethod
    def read(cls, path: Path) -> Run:
        data = json.loads(path.read_text())
        data["queries"] = [tuple(q) for q in data["queries"]]
        return cls(**data)


def report(run: Run) -> None:
    chunks = run.chunks
    print()
    print(
        f"garage.search on {chunks:,} chunks, {len(run.queries)} queries, limit 10, "
        f"200 candidates/engine{' (' + run.note + ')' if run.note else ''}"
    )
    # In the order they were asked for: the first fusion is the one the others compare with.
    shown = [c for c in run.columns if c.startswith("hybrid")] + ["vector", "keyword"]

    def p(part: str, column: str, q: float) -> float:
        return percentile(run.times(part, column), q)

    print(f"{'ms':22}{'p50':>10}{'p95':>10}  (hybrid: / slower single engine, p50 and p95)")
    for part in ("end to end", "database"):
        for column in shown:
            line = (
                f"{part + ', ' + column:22}{p(part, column, 50):>10.1f}{p(part, column, 95):>10.1f}"
            )
            if column.startswith("hybrid"):
                r50 = p(part, column, 50) / max(p(part, m, 50) for m in ("vector", "keyword"))
                r95 = p(part, column, 95) / max(p(part, m, 95) for m in ("vector", "keyword"))
                line += f"  {r50:.2f} {r95:.2f}"
            print(line)
    hybrids = [c for c in shown if c.startswith("hybrid")]
    first = hybrids[0]
    for other in hybrids[1:]:
        for part in ("end to end", "database"):
            print(f"{other} / {first}, {part}, p50: {p(part, other, 50) / p(part, first, 50):.3f}")

    print()
    print("by query class (ms; count of queries in brackets)")
    print(f"{'':42}{'p50':>9}{'p95':>9}{'p99':>9}{'max':>9}")
    for part in ("end to end", "database"):
        for kind in CLASSES:
            n = len(run.times(part, first, kind))
            if not n:
                continue
            for column in shown:
                values = run.times(part, column, kind)
                cells = "".join(f"{percentile(values, q):>9.1f}" for q in (50, 95, 99, 100))
                print(f"{f'{part}, {kind} [{n}], {column}':42}{cells}")
    slowest = max(max(run.times(part, c)) for part in ("end to end", "database") for c in shown)
    p50 = p("end to end", first, 50)
    p95 = p("end to end", first, 95)

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    print(
        f"targets (end to end, {first}): p50 {p50:.1f} ms <= 60 {verdict(p50 <= 60)}; "
        f"p95 {p95:.1f} ms <= 200 {verdict(p95 <= 200)}; slowest query of any class and way "
        f"{slowest:.0f} ms <= 1000 {verdict(slowest <= 1000)}"
    )
    # Why the end-to-end ratio exceeds the database one: hybrid pays the query's embedding
    # and both legs, vector-only pays no keyword leg, keyword-only pays no embedding.
    embed = [
        e - d
        for e, d in zip(
            run.times("end to end", "vector"), run.times("database", "vector"), strict=True
        )
    ]
    print(
        f"query embedding through the inference client (vector: end to end - database): "
        f"p50 {percentile(embed, 50):.1f} ms, p95 {percentile(embed, 95):.1f} ms"
    )
    report_costs([run])
    if run.ingest and run.bm25:
        report_bm25(run)


def report_costs(runs: list[Run]) -> None:
    """Bytes on disk per chunk and what loading took, one column per database."""
    print()
    heads = "".join(f"{f'{r.chunks:,} chunks':>26}" for r in runs)
    print(f"{'index on disk':34}{heads}")
    print(f"{'':34}" + f"{'MB':>13}{'bytes/chunk':>13}" * len(runs))
    for label in RELATIONS:
        cells = "".join(
            f"{r.sizes[label] / 2**20:>13,.0f}{r.sizes[label] / r.chunks:>13,.0f}" for r in runs
        )
        print(f"{label:34}{cells}")
    cells = "".join(
        f"{sum(r.sizes.values()) / 2**20:>13,.0f}{sum(r.sizes.values()) / r.chunks:>13,.0f}"
        for r in runs
    )
    print(f"{'all of the above':34}{cells}")
    if not any(r.load for r in runs):
        return
    print()
    print(f"{'loading':34}" + "".join(f"{f'{r.chunks:,} chunks':>26}" for r in runs))

    def row(label: str, cell: Any) -> None:
        print(f"{label:34}" + "".join(f"{cell(r.load) if r.load else '-':>26}" for r in runs))

    row(
        "chunks COPY, bm25 triggers on", lambda f: f"{f['chunks'] / f['chunk_copy_seconds']:,.0f}/s"
    )
    row("vectors COPY (binary)", lambda f: f"{f['chunks'] / f['vector_copy_seconds']:,.0f}/s")
    row("HNSW build", lambda f: f"{f['hnsw_seconds']:,.0f} s")
    row(
        "  maintenance_work_mem",
        lambda f: (
            f"{f['maintenance_work_mem_mb']:,} MB" + (", spilled" if f["hnsw_spilled"] else ", fit")
        ),
    )
    row("  backend's peak RSS", lambda f: f"{f['hnsw_peak_rss_mb']:,.0f} MB")
    row(
        "VACUUM ANALYZE after the load",
        lambda f: (
            "not run"
            if f["vacuum_analyze_seconds"] is None
            else f"{f['vacuum_analyze_seconds']:,.0f} s"
        ),
    )


def report_bm25(run: Run) -> None:
    assert run.ingest and run.bm25
    chunks, ingest, bm25 = run.chunks, run.ingest, run.bm25
    on, off = statistics.median(ingest["triggers on"]), statistics.median(ingest["triggers off"])
    per_chunk = 1000 / on - 1000 / off
    if not run.keyword:
        print()
        print(
            f"ingest at {chunks:,} chunks (store_document): {on:.0f} chunks/s with the bm25 "
            f"triggers, {off:.0f} without: {per_chunk:.1f} ms a chunk "
            f"({bm25['postings_per_chunk']:.0f} postings; embedding it here: "
            f"{bm25['embed_ms_per_chunk']:.0f} ms)"
        )
        return
    keyword = run.keyword
    print()
    print(f"BM25 statistics at {chunks:,} chunks: maintained by triggers vs derived at query time")
    kept50, kept95 = percentile(keyword["bm25"], 50), percentile(keyword["bm25"], 95)
    der50, der95 = percentile(keyword["bm25_derived"], 50), percentile(keyword["bm25_derived"], 95)
    print(f"{'':40}{'triggers (now)':>16}{'query time':>16}")
    print(f"{'ingest, chunks/s (store_document)':40}{on:>16.0f}{off:>16.0f}")
    print(f"{'keyword query p50 (ms, database)':40}{kept50:>16.1f}{der50:>16.1f}")
    print(f"{'keyword query p95 (ms, database)':40}{kept95:>16.1f}{der95:>16.1f}")
    print(
        f"({len(keyword['bm25'])} queries for the keyword rows; {bm25['postings_per_chunk']:.0f} "
        f"postings per chunk; embedding a chunk with {bm25['model_id']} here: "
        f"{bm25['embed_ms_per_chunk']:.0f} ms)"
    )
    print(
        f"conclusion: keep the triggers — they add {per_chunk:.1f} ms to storing a chunk "
        f"({per_chunk / bm25['embed_ms_per_chunk']:.0%} of what embedding it costs) and make a "
        f"keyword query {der50 / kept50:.0f}x faster at p50, because derived statistics unnest "
        "every matching chunk's tsvector and read all chunks for N and avgdl on every query, "
        "which grows with the corpus, while the postings are one index range scan per term."
        if der50 > kept50
        else f"conclusion: derived statistics were faster here ({der50:.1f} vs {kept50:.1f} ms)"
        f" and avoid {per_chunk:.1f} ms per stored chunk: derive them at query time."
    )


def combine(runs: list[Run]) -> None:
    """Several databases' runs side by side, smallest first, so the growth shows."""
    runs = sorted(runs, key=lambda r: r.chunks)
    columns = [c for c in runs[0].columns if all(c in r.columns for r in runs)]
    print()
    print(
        "garage.search at " + ", ".join(f"{r.chunks:,}" for r in runs) + " chunks"
        " (ms: p50 / p95 / max; the query classes in brackets)"
    )
    heads = "".join(f"{f'{r.chunks:,}':>24}" for r in runs)
    print(f"{'':44}{heads}")
    for part in ("end to end", "database"):
        for kind in (None, *CLASSES):
            if kind and not runs[0].times(part, columns[0], kind):
                continue
            for column in columns:
                cells = ""
                for r in runs:
                    values = r.times(part, column, kind)
                    cells += f"{percentile(values, 50):>8.1f}{percentile(values, 95):>8.1f}"
                    cells += f"{max(values):>8.0f}"
                label = f"{part}, {kind or 'all'}, {column}"
                print(f"{label:44}{cells}")
    for r in runs:
        if r.note:
            print(f"{r.chunks:,}: {r.note}")
    report_costs(runs)


def embed_cost(client: InferenceClient, model: RegisteredModel, texts: list[str]) -> float:
    """Milliseconds per chunk to embed ``texts`` for real (uncached), in backfill's batches."""
    began = time.perf_counter()
    for i in range(0, len(texts), 32):
        embed_texts(client, model, texts[i : i + 32])
    return (time.perf_counter() - began) * 1000 / len(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--frequent-queries",
        type=int,
        default=40,
        help="more queries, of 2-4 of the 50 lexemes in the most chunks (a class of its own)",
    )
    parser.add_argument(
        "--base-vectors",
        type=int,
        default=2000,
        help="chunks embedded for real; the rest derive from them",
    )
    parser.add_argument("--ingest-chunks", type=int, default=2000, help="0: no ingest rounds")
    parser.add_argument("--ingest-rounds", type=int, default=3)
    parser.add_argument(
        "--derived-queries",
        type=int,
        default=40,
        help="queries for the keyword comparison (the derived side takes seconds each at "
        "100k); 0: no comparison",
    )
    parser.add_argument(
        "--maintenance-work-mem",
        type=int,
        metavar="MB",
        help="for the HNSW build (default: sized from the vectors, at least 1024)",
    )
    parser.add_argument(
        "--no-vacuum",
        action="store_true",
        help="measure the load as it stands, with only what autovacuum did by then",
    )
    add_model_arguments(parser)
    parser.add_argument(
        "--load-only", action="store_true", help="load and keep the database, measure nothing"
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument("--reuse", metavar="NAME", help="measure a kept database again")
    parser.add_argument(
        "--fusions",
        default="rrf,convex",
        help="hybrid's fusions to time side by side (search.fusion), comma-separated",
    )
    parser.add_argument(
        "--save",
        type=Path,
        help="where to write the run as JSON (default: ~/.cache/garage/bench/search-NAME.json)",
    )
    parser.add_argument("--note", default="", help="a line saved with the run (e.g. the load)")
    parser.add_argument(
        "--combine",
        metavar="JSON,...",
        help="print saved runs side by side (one per database) and measure nothing",
    )
    args = parser.parse_args()
    if args.combine:
        combine([Run.read(Path(path)) for path in args.combine.split(",")])
        return

    config = bench_config(args)
    server = args.database_url or resolve_url(config)
    with timed("reading the real text"):
        corpus = Corpus(real_files())
        stage(f"  {len(corpus.files)} files, {corpus.total:,} characters")
    base_count = min(args.base_vectors, args.chunks)
    base = corpus.windows(base_count, seed=1)
    guard = EgressGuard.from_config(config)
    cache = VectorCache(args.model, args.dimensions)
    name = args.reuse or f"garage_bench_{uuid.uuid4().hex[:8]}"
    url = with_database(server, name)
    load_figures: LoadFigures | None = None
    ingest = keyword = bm25 = None
    partial: dict[str, list[float]] = {}
    with InferenceClient(guard, timeout=600) as client:
        [configured] = configured_models(config)
        tagged = searchable_tagged_queries(server, corpus, args.queries)
        if args.frequent_queries:
            # From the first 2,000 windows, the same at every scale, so the queries are too.
            sample = [corpus.text(w) for w in corpus.windows(2000, seed=1)]
            with psycopg.connect(server, autocommit=True) as conn:
                tagged += [
                    (q, FREQUENT)
                    for q in frequent_queries(conn, sample, args.frequent_queries, seed=5)
                ]
        queries = [text for text, _ in tagged]
        query_vectors = cache.embed(client, configured, queries)
        if not args.reuse:
            base_vectors = cache.embed(client, configured, [corpus.text(w) for w in base])
            with timed(
                f"choosing {args.chunks - base_count} more windows and deriving their vectors"
            ):
                others = corpus.windows(
                    args.chunks - base_count,
                    seed=2,
                    exclude=frozenset(corpus.text(w) for w in base),
                )
                vectors = np.concatenate(
                    [base_vectors, derived_vectors(corpus, base, base_vectors, others, seed=3)]
                )
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            stage(f"scratch database {name}")
        try:
            if not args.reuse:
                ensure_migrated(url)
                load_figures = load(
                    url,
                    config,
                    corpus,
                    base + others,
                    vectors,
                    maintenance_work_mem_mb=args.maintenance_work_mem,
                    vacuum=not args.no_vacuum,
                )
                with psycopg.connect(url, autocommit=True) as conn:
                    load_figures.save(conn, name)
                    if args.load_only:
                        report_maintenance(conn)
                        return
            with psycopg.connect(url, autocommit=True) as conn:
                load_figures = load_figures or LoadFigures.read(conn)
                report_maintenance(conn)
                model = default_model(conn, "text")
                assert model is not None, f"{name} has no registered text model"
                chunks = int(scalar(conn, "SELECT count(*) FROM chunks"))
                sizes = index_sizes(conn, model)
                timed_columns = columns(args.fusions.split(","))
                with timed(f"searching: {len(queries)} queries x {len(timed_columns)} ways"):
                    timings = measure_search(
                        conn, config, client, model, queries, query_vectors, timed_columns
                    )
                with timed("the partial note: the kept count's lookup against the exact count"):
                    partial = measure_partial(conn, model, rounds=max(200, len(queries)))
                if args.derived_queries:
                    some = queries[: args.derived_queries]
                    with timed(f"keyword: maintained postings vs derived, {len(some)} queries"):
                        keyword = measure_keyword_variants(conn, config, model, some)
                postings = int(scalar(conn, "SELECT count(*) FROM bm25_postings"))
            if args.ingest_chunks:
                probe = corpus.windows(args.ingest_chunks, seed=4)
                with timed(
                    f"ingest: {args.ingest_chunks} chunks x {args.ingest_rounds} rounds each way"
                ):
                    ingest = measure_ingest(
                        url, corpus, probe, args.ingest_rounds, per_document=100
                    )
                with timed("embedding 64 of those chunks for real, for scale"):
                    bm25 = {
                        "postings_per_chunk": postings / chunks,
                        "embed_ms_per_chunk": embed_cost(
                            client, model, [corpus.text(w) for w in probe[:64]]
                        ),
                        "model_id": model.model_id,
                    }
        finally:
            if args.keep or args.reuse or args.load_only:
                stage(f"kept {name}: rerun with --reuse {name}")
            else:
                with psycopg.connect(server, autocommit=True) as conn:
                    conn.execute(
                        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                            sql.Identifier(name)
                        )
                    )
    run = Run(
        chunks=chunks,
        queries=tagged,
        timings={f"{part}|{column}": ms for (part, column), ms in timings.items()},
        sizes=sizes,
        load=asdict(load_figures) if load_figures else None,
        ingest=ingest,
        keyword=keyword,
        bm25=bm25,
        note=args.note,
    )
    saved = args.save or CACHE / f"search-{name}.json"
    run.save(saved)
    stage(f"saved {saved}")
    report(run)
    if partial:
        print_partial(chunks, partial)


def report_maintenance(conn: psycopg.Connection[Any]) -> None:
    """When the big tables were last vacuumed and analyzed, by hand or by autovacuum: whether
    the plans and the index-only scans measured next had fresh statistics and visibility maps."""
    rows = conn.execute(
        "SELECT relname, n_live_tup, n_mod_since_analyze, n_ins_since_vacuum,"
        " greatest(last_vacuum, last_autovacuum), greatest(last_analyze, last_autoanalyze),"
        " autovacuum_count, autoanalyze_count"
        " FROM pg_stat_user_tables WHERE relname IN ('chunks', 'bm25_postings')"
        " OR relname LIKE 'emb\\_%%' ORDER BY relname"
    ).fetchall()
    for rel, live, mod, ins, vac, ana, autovac, autoana in rows:
        stage(
            f"  {rel}: {live:,} rows; {mod:,} changed since ANALYZE, {ins:,} inserted since "
            f"VACUUM; last vacuum {vac or 'never'}, analyze {ana or 'never'} "
            f"(autovacuum {autovac}x, autoanalyze {autoana}x)"
        )
    visible = scalar(
        conn,
        "SELECT round(100.0 * relallvisible / nullif(relpages, 0)) FROM pg_class"
        " WHERE relname = 'bm25_postings'",
    )
    stage(f"  bm25_postings: {visible}% of pages all-visible (index-only scans skip the heap)")


def searchable_queries(server: str, corpus: Corpus, count: int) -> list[str]:
    """Queries with at least one term full-text search can match (not only stop words)."""
    return [text for text, _ in searchable_tagged_queries(server, corpus, count)]


def searchable_tagged_queries(server: str, corpus: Corpus, count: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    seed = 10
    with psycopg.connect(server, autocommit=True) as conn:
        while len(out) < count:
            for query, label in make_tagged_queries(corpus, count, seed):
                if query not in (q for q, _ in out) and scalar(
                    conn, "SELECT length(to_tsvector('english', %s)) > 0", (query,)
                ):
                    out.append((query, label))
                if len(out) == count:
                    break
            seed += 1
    return out


if __name__ == "__main__":
    main()
