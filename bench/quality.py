"""Retrieval quality: nDCG@10 and recall@100 of keyword, vector and hybrid search, side by side.

    .venv/bin/python bench/quality.py [--database-url URL] [--keep] [--reuse DBNAME]
                                      [--host http://127.0.0.1:18080] [--model all-minilm-l6-v2]
                                      [--dimensions 384] [--distractors howto,tutorial,reference]

The judged collection is assembled from the Python documentation's FAQ (Debian's
``python3.11-doc``, pinned in tests/material.py, fetched and cached under
~/.cache/garage/material on first use). Every question heading of faq/*.rst is a query; the
text under it, up to the next heading, is a document of its own and the one judged relevant
to it (questions asked twice, such as "What is Python?", have both answers judged relevant).
The question itself is left out of its answer's file, so no engine can match the heading
verbatim. The howto, tutorial and language-reference pages are added as unjudged distractors:
about 2,000 chunks in all. Like most sparse-judgment collections it under-counts: a tutorial
page that also answers a question scores as a miss, for every engine alike.

Everything runs through the product: the files are ingested with ``ingest_source`` (walker,
extractors, quality gate, chunker), embedded with ``embed`` through llama-server, and queried
with ``garage.search`` in each mode — keyword with BM25 and with ts_rank_cd
(``search.keyword_ranking``), vector, and hybrid (RRF, k = 60, 200 candidates) over each
keyword ranking. Search returns chunks; each document ranks at its best chunk
(``garage.search.evaluation``), recall@100 over the documents of the first 100 hits (the most
any front door may ask for).

The database is a fresh one on the given server (default: the embedded one), dropped
afterwards unless ``--keep``; ``--reuse NAME`` measures a kept one again without ingesting.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import add_model_arguments, bench_config, with_database  # noqa: E402
from garage.config import GarageConfig  # noqa: E402
from garage.db import resolve_url  # noqa: E402
from garage.db.migrate import ensure_migrated  # noqa: E402
from garage.embed import embed  # noqa: E402
from garage.evaluate.metrics import document_ranking, ndcg_at, recall_at  # noqa: E402
from garage.inference import EgressGuard, InferenceClient  # noqa: E402
from garage.ingest import ingest_source  # noqa: E402
from garage.search import MAX_LIMIT, SearchQuery, search  # noqa: E402
from tests.material import material  # noqa: E402

SOURCES = "usr/share/doc/python3.11/html/_sources"
# A reST section title: a line of text over an underline of one repeated punctuation mark.
UNDERLINE = re.compile(r"""([=\-~^"*+#'`])\1{2,}""")
MIN_ANSWER_CHARS = 80  # "See above." is not a document
RUNS = (
    ("keyword", "bm25", "keyword, BM25"),
    ("keyword", "ts_rank_cd", "keyword, ts_rank_cd"),
    ("vector", "bm25", "vector"),
    ("hybrid", "bm25", "hybrid, BM25 + vector"),
    ("hybrid", "ts_rank_cd", "hybrid, ts_rank_cd + vector"),
)


@dataclass
class Collection:
    # Each answer's file, relative to the source root, and its text.
    documents: dict[str, str] = field(default_factory=dict)
    # Each query's text and the files judged relevant to it (gain 1).
    judgments: dict[str, dict[str, float]] = field(default_factory=dict)


def sections(text: str) -> list[tuple[str, str]]:
    """(title, body) for every section of a reST file, the body up to the next title."""
    lines = text.split("\n")
    titles = [
        i
        for i in range(len(lines) - 1)
        if lines[i].strip()
        and UNDERLINE.fullmatch(lines[i + 1].strip())
        and len(lines[i + 1].strip()) >= len(lines[i].strip())
        and not UNDERLINE.fullmatch(lines[i].strip())
    ]
    found = []
    for n, i in enumerate(titles):
        end = titles[n + 1] if n + 1 < len(titles) else len(lines)
        if n + 1 < len(titles) and UNDERLINE.fullmatch(lines[end - 1].strip()):
            end -= 1  # the next title's overline
        found.append((lines[i].strip(), "\n".join(lines[i + 2 : end]).strip()))
    return found


def faq_collection(faq_dir: Path) -> Collection:
    collection = Collection()
    for page in sorted(faq_dir.glob("*.rst.txt")):
        for n, (title, body) in enumerate(sections(page.read_text(encoding="utf-8"))):
            if not title.endswith("?") or len(body) < MIN_ANSWER_CHARS:
                continue
            name = f"faq/{page.name.removesuffix('.rst.txt')}/{n:03d}.txt"
            collection.documents[name] = body + "\n"
            collection.judgments.setdefault(title, {})[name] = 1.0
    return collection


def write_corpus(root: Path, collection: Collection, distractors: list[str]) -> None:
    docs = material("python3.11-doc") / SOURCES
    for name, text in collection.documents.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in distractors:
        for page in sorted((docs / folder).rglob("*.rst.txt")):
            target = root / folder / page.relative_to(docs / folder).with_suffix("")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(page.read_bytes())


def quality_config(args: argparse.Namespace, url: str, root: Path | None) -> GarageConfig:
    sources = [{"name": "python-docs", "roots": [str(root)]}] if root else []
    return bench_config(args, database={"url": url}, sources=sources)


def load(url: str, config: GarageConfig) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        [source] = config.sources
        started = time.monotonic()
        report = ingest_source(conn, config, source)
        print(
            f"ingested {report.seen} files: {report.indexed} indexed, {report.chunks_new} chunks, "
            f"{time.monotonic() - started:.1f} s",
            flush=True,
        )
        started = time.monotonic()
        with InferenceClient(EgressGuard.from_config(config), timeout=600) as client:
            [embedded] = embed(conn, client, config)
        print(
            f"embedded {embedded.vectors_written} chunks, {time.monotonic() - started:.1f} s",
            flush=True,
        )


def measure(url: str, config: GarageConfig, collection: Collection) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        [root] = conn.execute("SELECT roots[1] FROM sources WHERE name = 'python-docs'").fetchone()  # type: ignore[misc]
        uri_prefix = Path(root).as_uri() + "/"
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks)"
        ).fetchone()
        assert counts is not None
        print(
            f"collection: {len(collection.judgments)} queries, {len(collection.documents)} judged "
            f"answers; {counts[0]} documents, {counts[1]} chunks in the index",
            flush=True,
        )
        missing = [
            name
            for name in collection.documents
            if conn.execute("SELECT 1 FROM documents WHERE uri = %s", (uri_prefix + name,))
            .fetchone() is None
        ]  # fmt: skip
        if missing:
            print(f"note: {len(missing)} judged answers were not indexed, e.g. {missing[0]}")
        rows = []
        with InferenceClient(EgressGuard.from_config(config), timeout=60) as client:
            for mode, ranking, label in RUNS:
                run_config = config.model_copy(
                    update={"search": config.search.model_copy(update={"keyword_ranking": ranking})}
                )
                ndcg, recall, took = [], [], []
                for text, judgments in collection.judgments.items():
                    query = SearchQuery(text=text, limit=MAX_LIMIT, mode=mode)  # type: ignore[arg-type]
                    response = search(conn, run_config, query, client=client)
                    if response.mode != mode:
                        raise SystemExit(f"{label}: ran as {response.mode}: {response.degraded}")
                    ranked = document_ranking(
                        hit.uri.removeprefix(uri_prefix) for hit in response.hits
                    )
                    ndcg.append(ndcg_at(10, ranked, judgments))
                    recall.append(recall_at(100, ranked, judgments))
                    took.append(response.took_ms)
                rows.append((label, statistics.mean(ndcg), statistics.mean(recall), took))
                print(f"  {label}: done", flush=True)
    print()
    print(f"{'engine':<30} {'nDCG@10':>8} {'recall@100':>11} {'p50 ms':>8}")
    for label, ndcg_mean, recall_mean, took in rows:
        print(f"{label:<30} {ndcg_mean:>8.3f} {recall_mean:>11.3f} {statistics.median(took):>8.1f}")
    by_label = {label: ndcg_mean for label, ndcg_mean, _, _ in rows}
    best_single = max(by_label["keyword, BM25"], by_label["vector"])
    print()
    print(
        f"hybrid (BM25) / best single engine, nDCG@10: "
        f"{by_label['hybrid, BM25 + vector'] / best_single:.3f}; "
        f"hybrid (ts_rank_cd) / vector: "
        f"{by_label['hybrid, ts_rank_cd + vector'] / by_label['vector']:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_arguments(parser)
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--reuse", metavar="DBNAME", help="measure a kept database again")
    parser.add_argument("--distractors", default="howto,tutorial,reference")
    args = parser.parse_args()

    collection = faq_collection(material("python3.11-doc") / SOURCES / "faq")
    server = args.database_url or resolve_url(bench_config(args))
    name = args.reuse or f"garage_quality_{uuid.uuid4().hex[:8]}"
    url = with_database(server, name)
    if args.reuse:
        measure(url, quality_config(args, url, None), collection)
        return
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with tempfile.TemporaryDirectory(prefix="garage-quality-") as tmp:
            root = Path(tmp) / "python-docs"
            distractors = [d for d in args.distractors.split(",") if d]
            write_corpus(root, collection, distractors)
            config = quality_config(args, url, root)
            ensure_migrated(url)
            load(url, config)
            measure(url, config, collection)
    finally:
        if args.keep:
            print(f"kept database {name} (--reuse {name} measures it again)")
        else:
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )


if __name__ == "__main__":
    main()
