-- 004: what the keyword leg of search needs to rank by BM25 inside PostgreSQL.
--
-- BM25 needs, per query term, its frequency in each chunk (tf), each chunk's length in tokens
-- (dl), the number of chunks holding the term (df), and the corpus totals (N, average dl).
-- They are kept here by triggers on chunks, in the same transaction as the chunk rows, so they
-- are exact under insert, chunk reuse (a kept chunk's row is not touched) and delete, with no
-- rebuild step. The tokens are the chunk's own `tsv` (to_tsvector('english', text)), so the
-- statistics describe exactly what full-text search matches.
--
-- df is not stored: scoring reads every posting of each query term anyway, so df is the count
-- of those postings at no extra cost — and a per-term row would be a hot row that every
-- concurrent ingest transaction locks (a deadlock waiting to happen between two sources).

-- The inverted index: one row per (term, chunk). The primary key carries tf and dl, so a
-- query term's postings are one index-only range scan.
CREATE TABLE bm25_postings (
    term     text    NOT NULL,
    chunk_id bigint  NOT NULL,
    tf       integer NOT NULL,
    dl       integer NOT NULL,
    PRIMARY KEY (term, chunk_id) INCLUDE (tf, dl)
);

-- Corpus totals, split in 64 rows keyed by backend: two ingest runs committing at once add to
-- different rows instead of queueing on one. N and the total length are the sums of all rows.
CREATE TABLE bm25_corpus (
    shard  integer PRIMARY KEY,
    chunks bigint  NOT NULL DEFAULT 0,
    tokens bigint  NOT NULL DEFAULT 0
);

-- A chunk's length in tokens: every occurrence of every lexeme (stop words are not tokens).
CREATE FUNCTION bm25_length(tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer FROM unnest($1)
$$;

CREATE FUNCTION bm25_chunks_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bm25_postings (term, chunk_id, tf, dl)
    SELECT t.lexeme, n.id, coalesce(array_length(t.positions, 1), 1), bm25_length(n.tsv)
    FROM bm25_new_chunks n CROSS JOIN LATERAL unnest(n.tsv) t;
    INSERT INTO bm25_corpus AS c (shard, chunks, tokens)
    SELECT pg_backend_pid() % 64, count(*), coalesce(sum(bm25_length(tsv)), 0)
    FROM bm25_new_chunks HAVING count(*) > 0
    ON CONFLICT (shard) DO UPDATE
        SET chunks = c.chunks + EXCLUDED.chunks, tokens = c.tokens + EXCLUDED.tokens;
    RETURN NULL;
END
$$;

CREATE FUNCTION bm25_chunks_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- By primary key: (term, chunk) pairs from the deleted chunks' own vectors.
    DELETE FROM bm25_postings p
    USING (SELECT o.id, t.lexeme FROM bm25_old_chunks o CROSS JOIN LATERAL unnest(o.tsv) t) d
    WHERE p.term = d.lexeme AND p.chunk_id = d.id;
    INSERT INTO bm25_corpus AS c (shard, chunks, tokens)
    SELECT pg_backend_pid() % 64, -count(*), -coalesce(sum(bm25_length(tsv)), 0)
    FROM bm25_old_chunks HAVING count(*) > 0
    ON CONFLICT (shard) DO UPDATE
        SET chunks = c.chunks + EXCLUDED.chunks, tokens = c.tokens + EXCLUDED.tokens;
    RETURN NULL;
END
$$;

-- Ingest never rewrites a chunk's text (a changed chunk is deleted and inserted), but should
-- anything do it, the statistics follow.
CREATE FUNCTION bm25_chunk_text_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_length integer := bm25_length(OLD.tsv);
    new_length integer := bm25_length(NEW.tsv);
BEGIN
    DELETE FROM bm25_postings WHERE chunk_id = OLD.id
        AND term IN (SELECT lexeme FROM unnest(OLD.tsv));
    INSERT INTO bm25_postings (term, chunk_id, tf, dl)
    SELECT t.lexeme, NEW.id, coalesce(array_length(t.positions, 1), 1), new_length
    FROM unnest(NEW.tsv) t;
    INSERT INTO bm25_corpus AS c (shard, chunks, tokens)
    VALUES (pg_backend_pid() % 64, 0, new_length - old_length)
    ON CONFLICT (shard) DO UPDATE SET tokens = c.tokens + EXCLUDED.tokens;
    RETURN NULL;
END
$$;

CREATE FUNCTION bm25_chunks_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE bm25_postings;
    DELETE FROM bm25_corpus;
    RETURN NULL;
END
$$;

CREATE TRIGGER chunks_bm25_insert AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS bm25_new_chunks
    FOR EACH STATEMENT EXECUTE FUNCTION bm25_chunks_inserted();
CREATE TRIGGER chunks_bm25_delete AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS bm25_old_chunks
    FOR EACH STATEMENT EXECUTE FUNCTION bm25_chunks_deleted();
CREATE TRIGGER chunks_bm25_update AFTER UPDATE OF text ON chunks
    FOR EACH ROW WHEN (OLD.text IS DISTINCT FROM NEW.text)
    EXECUTE FUNCTION bm25_chunk_text_changed();
CREATE TRIGGER chunks_bm25_truncate AFTER TRUNCATE ON chunks
    FOR EACH STATEMENT EXECUTE FUNCTION bm25_chunks_truncated();

-- Chunks stored before this migration.
INSERT INTO bm25_postings (term, chunk_id, tf, dl)
SELECT t.lexeme, c.id, coalesce(array_length(t.positions, 1), 1), bm25_length(c.tsv)
FROM chunks c CROSS JOIN LATERAL unnest(c.tsv) t;
INSERT INTO bm25_corpus (shard, chunks, tokens)
SELECT 0, count(*), coalesce(sum(bm25_length(tsv)), 0) FROM chunks;

-- Search filters on a date held in JSON metadata (a message's `date`): a value that is not a
-- timestamp must make the row undated, not fail the whole query.
CREATE FUNCTION garage_try_timestamptz(value text) RETURNS timestamptz
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RETURN value::timestamptz;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
