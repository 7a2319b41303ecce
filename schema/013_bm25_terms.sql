-- 012: document frequencies kept per term, and postings readable in order of impact, so the
-- keyword leg need not read every posting of a term found in a large share of the chunks.
--
-- 004 counted df from the postings on every query: free while scoring read every posting of
-- every term anyway, but at 1,000,000 chunks a word in half of them is 500,000 postings to
-- count and score, and a query of such words took seconds. garage/search/keyword.py now reads
-- whole only the postings of terms below search.bm25_common_df; it needs df without reading
-- the postings (bm25_terms), and a common term's best postings first (bm25_postings_impact).
--
-- df is split in 64 shards keyed by backend, as bm25_corpus is, so two ingest runs committing
-- at once add to different rows; within a shard the rows are upserted in term order, so two
-- transactions that do meet wait for each other instead of deadlocking. df is the sum of a
-- term's rows.
CREATE TABLE bm25_terms (
    term  text    NOT NULL,
    shard integer NOT NULL,
    df    bigint  NOT NULL,
    PRIMARY KEY (term, shard)
) WITH (fillfactor = 80);  -- room for df's updates to stay on their page (HOT)

-- BM25's term-frequency part, tf·(k1 + 1) / (tf + k1·(1 − b + b·dl/avgdl)), at the default
-- k1 = 1.2 and b = 0.75 and a reference length of 100 tokens (chunks of 200 to 1,200
-- characters averaged 77 in bench/search.py's corpus). It only orders a term's postings, to read
-- the likeliest high scorers first; every score is computed from tf and dl, with the real
-- avgdl and the configured k1 and b.
CREATE FUNCTION bm25_impact(tf integer, dl integer) RETURNS real
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT (tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / 100.0)))::real
$$;

CREATE OR REPLACE FUNCTION bm25_chunks_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH n AS MATERIALIZED (
        SELECT id, tsv, bm25_length(tsv) AS dl FROM bm25_new_chunks
    ), postings AS (
        INSERT INTO bm25_postings (term, chunk_id, tf, dl)
        SELECT t.lexeme, n.id, coalesce(array_length(t.positions, 1), 1), n.dl
        FROM n CROSS JOIN LATERAL unnest(n.tsv) t
        RETURNING term
    ), terms AS (
        INSERT INTO bm25_terms AS bt (term, shard, df)
        SELECT term, pg_backend_pid() % 64, count(*) FROM postings GROUP BY term ORDER BY term
        ON CONFLICT (term, shard) DO UPDATE SET df = bt.df + EXCLUDED.df
    )
    INSERT INTO bm25_corpus AS c (shard, chunks, tokens)
    SELECT pg_backend_pid() % 64, count(*), coalesce(sum(dl), 0)
    FROM n HAVING count(*) > 0
    ON CONFLICT (shard) DO UPDATE
        SET chunks = c.chunks + EXCLUDED.chunks, tokens = c.tokens + EXCLUDED.tokens;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION bm25_chunks_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH postings AS (
        -- By primary key: (term, chunk) pairs from the deleted chunks' own vectors.
        DELETE FROM bm25_postings p
        USING (SELECT o.id, t.lexeme FROM bm25_old_chunks o CROSS JOIN LATERAL unnest(o.tsv) t) d
        WHERE p.term = d.lexeme AND p.chunk_id = d.id
        RETURNING p.term
    )
    INSERT INTO bm25_terms AS bt (term, shard, df)
    SELECT term, pg_backend_pid() % 64, -count(*) FROM postings GROUP BY term ORDER BY term
    ON CONFLICT (term, shard) DO UPDATE SET df = bt.df + EXCLUDED.df;
    INSERT INTO bm25_corpus AS c (shard, chunks, tokens)
    SELECT pg_backend_pid() % 64, -count(*), -coalesce(sum(bm25_length(tsv)), 0)
    FROM bm25_old_chunks HAVING count(*) > 0
    ON CONFLICT (shard) DO UPDATE
        SET chunks = c.chunks + EXCLUDED.chunks, tokens = c.tokens + EXCLUDED.tokens;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION bm25_chunk_text_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_length integer := bm25_length(OLD.tsv);
    new_length integer := bm25_length(NEW.tsv);
BEGIN
    -- Two statements, so the old postings are gone before the new ones (same keys) go in.
    WITH gone AS (
        DELETE FROM bm25_postings WHERE chunk_id = OLD.id
            AND term IN (SELECT lexeme FROM unnest(OLD.tsv))
        RETURNING term
    )
    INSERT INTO bm25_terms AS bt (term, shard, df)
    SELECT term, pg_backend_pid() % 64, -count(*) FROM gone GROUP BY term ORDER BY term
    ON CONFLICT (term, shard) DO UPDATE SET df = bt.df + EXCLUDED.df;
    WITH added AS (
        INSERT INTO bm25_postings (term, chunk_id, tf, dl)
        SELECT t.lexeme, NEW.id, coalesce(array_length(t.positions, 1), 1), new_length
        FROM unnest(NEW.tsv) t
        RETURNING term
    )
    INSERT INTO bm25_terms AS bt (term, shard, df)
    SELECT term, pg_backend_pid() % 64, count(*) FROM added GROUP BY term ORDER BY term
    ON CONFLICT (term, shard) DO UPDATE SET df = bt.df + EXCLUDED.df;
    INSERT INTO bm25_corpus AS c (shard, chunks, tokens)
    VALUES (pg_backend_pid() % 64, 0, new_length - old_length)
    ON CONFLICT (shard) DO UPDATE SET tokens = c.tokens + EXCLUDED.tokens;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION bm25_chunks_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE bm25_postings, bm25_terms;
    DELETE FROM bm25_corpus;
    RETURN NULL;
END
$$;

-- The postings already stored: no writer may add any until this commits, or its df would be
-- counted by neither the old trigger nor this backfill.
LOCK TABLE bm25_postings IN SHARE MODE;
INSERT INTO bm25_terms (term, shard, df)
SELECT term, 0, count(*) FROM bm25_postings GROUP BY term;

-- A term's postings, best first; the columns included so the first ones are read from the
-- index alone (an index-only scan needs the columns the expression is made of).
CREATE INDEX bm25_postings_impact ON bm25_postings (term, bm25_impact(tf, dl) DESC)
    INCLUDE (chunk_id, tf, dl);
