-- 010: the insert trigger computes each new chunk's length once, not once per term.
--
-- 004's bm25_chunks_inserted called bm25_length(n.tsv) in the select list of the join with the
-- chunk's own lexemes, so a chunk of k distinct terms unnested its vector k + 1 times. The
-- postings are the same rows; only the work to make them changes. The length is taken in a
-- MATERIALIZED CTE so the planner cannot fold it back into the per-term rows.

CREATE OR REPLACE FUNCTION bm25_chunks_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH n AS MATERIALIZED (
        SELECT id, tsv, bm25_length(tsv) AS dl FROM bm25_new_chunks
    ), postings AS (
        INSERT INTO bm25_postings (term, chunk_id, tf, dl)
        SELECT t.lexeme, n.id, coalesce(array_length(t.positions, 1), 1), n.dl
        FROM n CROSS JOIN LATERAL unnest(n.tsv) t
    )
    INSERT INTO bm25_corpus AS c (shard, chunks, tokens)
    SELECT pg_backend_pid() % 64, count(*), coalesce(sum(dl), 0)
    FROM n HAVING count(*) > 0
    ON CONFLICT (shard) DO UPDATE
        SET chunks = c.chunks + EXCLUDED.chunks, tokens = c.tokens + EXCLUDED.tokens;
    RETURN NULL;
END
$$;
