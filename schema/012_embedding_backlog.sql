-- 012: where embedding stands, cheaply: how many chunks of each source wait for a vector under
-- each model (embedding_backlog), and what each backfill run embedded in how long
-- (embedding_runs), the rate `garage status` estimates the time left from.
--
-- Search reads the backlog on every query that uses the vector leg, to say how much of the
-- index that leg could not see, so it must cost a lookup, not a count: counting the chunks
-- without a vector is an anti-join over every chunk in scope (a few hundred milliseconds at
-- a million chunks). The count is kept instead:
--   * new chunks add to it here, in the transaction that writes them (a trigger on chunks,
--     per statement, like BM25's): a new chunk has no vector under any model;
--   * the backfill counts exactly, under the source's writer lock, when it starts, and takes
--     off what each batch embedded in that batch's transaction (garage/embed/backlog.py);
--   * a model registered anew, or whose vectors were dropped, is counted in full.
-- A chunk deleted before it was embedded (a file edited or removed between ingest and embed)
-- stays counted until the next backfill of its source: when its delete is seen, the vectors
-- that would tell whether it had one are gone already (they cascade first) and, for a removed
-- document, so is the row naming its source.

CREATE TABLE embedding_backlog (
    model_id   bigint NOT NULL REFERENCES embedding_models (id) ON DELETE CASCADE,
    source_id  bigint NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    pending    bigint NOT NULL DEFAULT 0,
    -- When the backfill (or the registry) last counted it exactly.
    counted_at timestamptz,
    PRIMARY KEY (model_id, source_id)
);

CREATE TABLE embedding_runs (
    id               bigserial PRIMARY KEY,
    model_id         bigint NOT NULL REFERENCES embedding_models (id) ON DELETE CASCADE,
    -- NULL for a run over every source.
    source_id        bigint REFERENCES sources (id) ON DELETE CASCADE,
    chunks           text NOT NULL CHECK (chunks IN ('all', 'content', 'facts')),
    started_at       timestamptz NOT NULL,
    finished_at      timestamptz NOT NULL DEFAULT now(),
    -- The whole run, its opening counts included: the rate a person waits at.
    seconds          double precision NOT NULL CHECK (seconds >= 0),
    pending          bigint NOT NULL,
    vectors_written  bigint NOT NULL,
    vectors_reused   bigint NOT NULL,
    stopped          text
);
CREATE INDEX embedding_runs_model_idx ON embedding_runs (model_id, finished_at DESC);

CREATE FUNCTION embedding_backlog_chunks_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO embedding_backlog AS b (model_id, source_id, pending)
    SELECT m.id, d.source_id, count(*)
    FROM backlog_new_chunks n
    JOIN documents d ON d.id = n.document_id
    JOIN embedding_models m ON m.modality = n.modality
    GROUP BY m.id, d.source_id
    ON CONFLICT (model_id, source_id) DO UPDATE SET pending = b.pending + EXCLUDED.pending;
    RETURN NULL;
END
$$;

CREATE FUNCTION embedding_backlog_chunks_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM embedding_backlog;
    RETURN NULL;
END
$$;

CREATE TRIGGER chunks_backlog_insert AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS backlog_new_chunks
    FOR EACH STATEMENT EXECUTE FUNCTION embedding_backlog_chunks_inserted();
CREATE TRIGGER chunks_backlog_truncate AFTER TRUNCATE ON chunks
    FOR EACH STATEMENT EXECUTE FUNCTION embedding_backlog_chunks_truncated();

-- The models registered before this migration, counted once now: a content chunk's vector is
-- in emb_<slug>, a fact chunk's in potential_fact_emb_<slug>.
DO $$
DECLARE
    m record;
BEGIN
    FOR m IN SELECT id, slug, modality FROM embedding_models LOOP
        IF to_regclass('emb_' || m.slug) IS NULL
           OR to_regclass('potential_fact_emb_' || m.slug) IS NULL THEN
            CONTINUE;
        END IF;
        EXECUTE format(
            'INSERT INTO embedding_backlog (model_id, source_id, pending, counted_at)'
            ' SELECT %s, s.id, coalesce(n.pending, 0), now() FROM sources s LEFT JOIN ('
            '  SELECT d.source_id, count(*) AS pending FROM chunks c'
            '  JOIN documents d ON d.id = c.document_id WHERE c.modality = %L AND CASE'
            '   WHEN c.fact_id IS NULL THEN NOT EXISTS (SELECT 1 FROM %I e WHERE e.chunk_id = c.id)'
            '   ELSE NOT EXISTS (SELECT 1 FROM %I p WHERE p.fact_id = c.fact_id) END'
            '  GROUP BY d.source_id) n ON n.source_id = s.id',
            m.id, m.modality, 'emb_' || m.slug, 'potential_fact_emb_' || m.slug);
    END LOOP;
END
$$;
