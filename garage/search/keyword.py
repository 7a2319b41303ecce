"""The keyword leg: full-text candidates, ranked by BM25 (default) or ``ts_rank_cd``.

The query's terms are ORed, not ANDed: ``websearch_to_tsquery`` would require every word of
"secure enclave firmware validation" in one chunk and return nothing, and since fusion decides
the final order the keyword side should favour recall. The terms are the lexemes of
``to_tsvector('english', query)`` — the very function that built each chunk's ``tsv`` — so a
query term matches exactly the postings it should.

BM25 (Lucene's form, whose idf never goes negative)::

    score(chunk) = Σ_t  ln(1 + (N - df_t + 0.5) / (df_t + 0.5))
                        · tf · (k1 + 1) / (tf + k1 · (1 - b + b · dl / avgdl))

over the distinct query terms t, with tf and dl from ``bm25_postings``, df from ``bm25_terms``
and N, avgdl from ``bm25_corpus`` (schema/004_bm25.sql and 013_bm25_terms.sql, kept exact by
triggers). Statistics are corpus-wide: a filter narrows the candidates, not the meaning of a
term's rarity.

Each function returns CTEs defining ``kw(chunk_id, rank, score)``: at most ``candidates`` rows,
rank 1-based. Parameters: ``text``, ``candidates``, ``k1``, ``b``, ``common_df`` and the
filters' own.
"""

from __future__ import annotations

from psycopg import sql

from garage.search.filters import FILTER_JOINS, Filters

TS_CONFIG = "english"  # what chunks.tsv is built with (schema/001_core.sql)

_TERMS = sql.SQL(
    "kw_terms AS (SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector({cfg}, %(text)s)))"
).format(cfg=sql.Literal(TS_CONFIG))


# How many of a common term's postings are read, in candidates: the best by impact.
COMMON_READ = 25
# How many chunks, in candidates, are scored exactly once the postings read have ranked them.
# At 1,000,000 chunks 10 instead of 2 brought phrase queries' top 10 closer to exact BM25's
# (0.92 of it in common against 0.83) for twice the keyword leg's time (bench/search.py).
POOL = 2
# BM25's term-frequency part of one posting p, with k the kw_corpus row.
_TF_PART = sql.SQL(
    "p.tf * (%(k1)s::float8 + 1)"
    " / (p.tf + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * p.dl / k.avgdl))"
)


def bm25_ctes(filters: Filters) -> sql.Composable:
    """BM25 over the maintained postings, reading whole only the postings of terms that are
    not common.

    A term in more than ``bm25_common_df`` chunks is common: of its postings only the best
    ``COMMON_READ`` × ``candidates`` by impact are read (schema/013_bm25_terms.sql), the
    rest are left on disk. The postings read give each chunk a first score; the best ``POOL``
    × ``candidates`` chunks by it are then scored again, exactly: the other terms' part from
    their postings, every common term's part by looking up the chunk's (term, chunk) posting.
    So every score returned is exact BM25 over all the query's terms. What is approximate is
    which chunks get scored: a chunk whose common terms' postings were not among the best read
    counts only its other terms in the first score, and may miss the pool it would have made:
    at 1,000,000 chunks the top 10 shared 0.83 of exact BM25's for phrases, less for queries
    made only of the corpus's commonest words, whose scores lie close together (README,
    Search). A query with no common term reads every posting and ranks exactly as ever. df and
    the corpus totals come from bm25_terms and bm25_corpus, counted by triggers.
    """
    common_join, common_predicate = _filter_join(filters, "p.chunk_id")
    return sql.SQL(
        """
        {terms},
        kw_corpus AS (
            SELECT sum(chunks)::float8 AS n,
                   sum(tokens)::float8 / nullif(sum(chunks), 0) AS avgdl
            FROM bm25_corpus
        ),
        kw_idf AS MATERIALIZED (
            SELECT t.term, ln(1 + (k.n - d.df + 0.5) / (d.df + 0.5)) AS idf,
                   d.df > %(common_df)s AS common
            FROM kw_terms t CROSS JOIN kw_corpus k
                 CROSS JOIN LATERAL (
                     SELECT sum(b.df)::float8 AS df FROM bm25_terms b WHERE b.term = t.term
                 ) d
            WHERE d.df > 0
        ),
        kw_read AS (
            -- Every posting of the terms that are not common, the best of the common ones'.
            SELECT p.chunk_id, sum(i.idf * {tf_part}) AS first,
                   sum(i.idf * {tf_part}) FILTER (WHERE NOT i.common) AS exact_part
            FROM kw_idf i CROSS JOIN kw_corpus k
                 CROSS JOIN LATERAL (
                     SELECT p.chunk_id, p.tf, p.dl FROM bm25_postings p
                     WHERE p.term = i.term AND NOT i.common
                     UNION ALL
                     (SELECT p.chunk_id, p.tf, p.dl FROM bm25_postings p {common_join}
                      WHERE p.term = i.term AND i.common AND {common_predicate}
                      ORDER BY bm25_impact(p.tf, p.dl) DESC
                      LIMIT ceil({common_read} * %(candidates)s)::bigint)
                 ) p {filter_from}
            GROUP BY p.chunk_id
        ),
        kw AS (
            SELECT chunk_id, row_number() OVER (ORDER BY score DESC, chunk_id) AS rank, score
            FROM (
                SELECT pool.chunk_id, coalesce(pool.exact_part, 0) + coalesce(cs.part, 0) AS score
                FROM (SELECT chunk_id, exact_part FROM kw_read ORDER BY first DESC, chunk_id
                      LIMIT ceil({pool} * %(candidates)s)::bigint) pool
                     CROSS JOIN LATERAL (
                         -- The common terms' part, by (term, chunk) lookups.
                         SELECT sum(i.idf * {tf_part}) AS part
                         FROM kw_idf i CROSS JOIN kw_corpus k
                              JOIN bm25_postings p
                                ON p.term = i.term AND p.chunk_id = pool.chunk_id
                         WHERE i.common
                     ) cs
                ORDER BY score DESC, pool.chunk_id
                LIMIT %(candidates)s
            ) top
        )
        """
    ).format(
        terms=_TERMS,
        tf_part=_TF_PART,
        filter_from=_filter_from(filters, "p.chunk_id"),
        common_join=common_join,
        common_predicate=common_predicate,
        common_read=sql.Literal(COMMON_READ),
        pool=sql.Literal(POOL),
    )


def bm25_derived_ctes(filters: Filters) -> sql.Composable:
    """BM25 with every statistic derived at query time from the chunks' own ``tsv``.

    Kept for ``bench/search.py``'s comparison with the maintained statistics, and tested to
    give the same scores. tf comes from unnesting each matching chunk's vector, df from
    counting the matching chunks (every chunk holding a term matches the ORed query), and N and
    avgdl from a pass over all chunks — the part no index can answer.
    """
    return sql.SQL(
        """
        {terms},
        kw_query AS (
            SELECT string_agg(
                       '''' || replace(replace(term, '\\', '\\\\'), '''', '''''') || '''',
                       ' | ')::tsquery AS q
            FROM kw_terms
        ),
        kw_corpus AS (
            SELECT count(*)::float8 AS n, avg(bm25_length(tsv))::float8 AS avgdl FROM chunks
        ),
        kw_matches AS (
            SELECT c.id AS chunk_id, t.lexeme AS term,
                   coalesce(array_length(t.positions, 1), 1) AS tf, bm25_length(c.tsv) AS dl
            FROM chunks c CROSS JOIN kw_query kq
                 CROSS JOIN LATERAL unnest(c.tsv) t
            WHERE c.tsv @@ kq.q AND t.lexeme IN (SELECT term FROM kw_terms)
        ),
        kw_postings AS (
            SELECT chunk_id, tf, dl, count(*) OVER (PARTITION BY term) AS df FROM kw_matches
        ),
        kw AS (
            SELECT chunk_id, row_number() OVER (ORDER BY score DESC, chunk_id) AS rank, score
            FROM (
                SELECT kp.chunk_id,
                       sum(ln(1 + (k.n - kp.df + 0.5) / (kp.df + 0.5))
                           * kp.tf * (%(k1)s::float8 + 1)
                           / (kp.tf + %(k1)s::float8
                              * (1 - %(b)s::float8 + %(b)s::float8 * kp.dl / k.avgdl))
                       ) AS score
                FROM kw_postings kp CROSS JOIN kw_corpus k {filter_from}
                GROUP BY kp.chunk_id
                ORDER BY score DESC, kp.chunk_id
                LIMIT %(candidates)s
            ) top
        )
        """
    ).format(terms=_TERMS, filter_from=_filter_from(filters, "kp.chunk_id"))


def ts_rank_cd_ctes(filters: Filters) -> sql.Composable:
    """``ts_rank_cd`` over the ORed terms, through the GIN index on ``chunks.tsv``."""
    return sql.SQL(
        """
        {terms},
        kw_query AS (
            -- Each lexeme quoted as a tsquery operand, so no character in it is an operator.
            SELECT string_agg(
                       '''' || replace(replace(term, '\\', '\\\\'), '''', '''''') || '''',
                       ' | ')::tsquery AS q
            FROM kw_terms
        ),
        kw AS (
            SELECT chunk_id, row_number() OVER (ORDER BY score DESC, chunk_id) AS rank, score
            FROM (
                SELECT c.id AS chunk_id, ts_rank_cd(c.tsv, kq.q)::float8 AS score
                FROM chunks c CROSS JOIN kw_query kq {joins}
                WHERE c.tsv @@ kq.q AND {predicate}
                ORDER BY score DESC, c.id
                LIMIT %(candidates)s
            ) top
        )
        """
    ).format(
        terms=_TERMS,
        joins=FILTER_JOINS if filters.active else sql.SQL(""),
        predicate=filters.predicate,
    )


def _filter_join(filters: Filters, chunk_id: str) -> tuple[sql.Composable, sql.Composable]:
    """The joins a filter needs and its predicate, for a query that has a WHERE of its own."""
    if not filters.active:
        return sql.SQL(""), sql.SQL("true")
    joins = sql.SQL("JOIN chunks c ON c.id = {chunk_id} {joins}").format(
        chunk_id=sql.SQL(chunk_id), joins=FILTER_JOINS
    )
    return joins, filters.predicate


def _filter_from(filters: Filters, chunk_id: str) -> sql.Composable:
    """Joins and WHERE restricting scored postings to chunks that pass the filters."""
    if not filters.active:
        return sql.SQL("")
    return sql.SQL("JOIN chunks c ON c.id = {chunk_id} {joins} WHERE {predicate}").format(
        chunk_id=sql.SQL(chunk_id), joins=FILTER_JOINS, predicate=filters.predicate
    )


def keyword_ctes(ranking: str, filters: Filters) -> sql.Composable:
    if ranking == "bm25":
        return bm25_ctes(filters)
    if ranking == "bm25_derived":
        return bm25_derived_ctes(filters)
    if ranking == "ts_rank_cd":
        return ts_rank_cd_ctes(filters)
    raise ValueError(f"search.keyword_ranking: {ranking!r} is not 'bm25' or 'ts_rank_cd'")
