-- 006: potential facts. Each is grounded to the exact span of documents.content it came from
-- (content[start_offset:end_offset] = text), records the prompt that asked for it, and owns a
-- chunk of its own (chunks.fact_id) so the ordinary embedding backfill gives it a vector under
-- every model, in that model's potential_fact_emb_<slug> (created with its emb_<slug>).

CREATE TABLE facts (
    id            bigserial PRIMARY KEY,
    document_id   bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    -- The prompt that produced it ('metadata' for the facts read from a mail's or a thread's
    -- header fields with no model) and the hash of its description and examples.
    prompt_name   text NOT NULL,
    prompt_sha256 text NOT NULL,
    -- '<provider>:<model id>' of the extractor, or 'metadata'.
    model         text NOT NULL,
    -- Free: 'fact' for the default prompt, person/place/... for an entities prompt,
    -- sender/recipient/subject/participant for metadata facts.
    fact_class    text NOT NULL,
    text          text NOT NULL,
    start_offset  integer NOT NULL,
    end_offset    integer NOT NULL,
    -- LangExtract's alignment (match_exact, match_lesser, match_greater, match_fuzzy), or
    -- 'metadata' for a header value found verbatim.
    alignment     text NOT NULL,
    attributes    jsonb NOT NULL DEFAULT '{}',
    -- Metadata facts only: what the distillation anchors on. A person is 'author:<id>' when an
    -- authors row has their address, else 'address:<address>'; a subject is
    -- 'subject:<lower-cased text without Re:/Fwd:>'.
    key           text,
    ord           integer NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (start_offset >= 0 AND end_offset > start_offset),
    CHECK (text <> '')
);
CREATE INDEX facts_document_prompt_idx ON facts (document_id, prompt_name);
CREATE INDEX facts_class_idx ON facts (fact_class);
CREATE INDEX facts_key_idx ON facts (key) WHERE key IS NOT NULL;
CREATE INDEX facts_text_fts_idx ON facts USING gin (to_tsvector('english', text));

-- What each prompt last ran with over each document: --stale-only skips a prompt whose run is
-- current (same prompt hash, same content hash, same model).
CREATE TABLE fact_runs (
    document_id    bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    prompt_name    text NOT NULL,
    prompt_sha256  text NOT NULL,
    content_sha256 text NOT NULL,
    model          text NOT NULL,
    facts_stored   integer NOT NULL DEFAULT 0,
    dropped        integer NOT NULL DEFAULT 0,
    ran_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (document_id, prompt_name)
);

-- The key 001 left out: a fact's chunk goes with the fact, and its vectors with the chunk.
ALTER TABLE chunks ADD CONSTRAINT chunks_fact_id_fkey
    FOREIGN KEY (fact_id) REFERENCES facts (id) ON DELETE CASCADE;

-- A document whose content changes drops its facts with it (and so their chunks and vectors):
-- they were grounded in text that is gone. Its runs go too, so every prompt runs again.
CREATE FUNCTION facts_content_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM facts WHERE document_id = NEW.id;
    DELETE FROM fact_runs WHERE document_id = NEW.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER documents_facts_content_changed AFTER UPDATE OF content_sha256 ON documents
    FOR EACH ROW WHEN (OLD.content_sha256 IS DISTINCT FROM NEW.content_sha256)
    EXECUTE FUNCTION facts_content_changed();

-- Models registered before this migration get their fact-vector table now; later ones get it
-- when they are registered (garage.embed.registry), next to their emb_<slug>. The index is
-- named pfe_<slug>_hnsw: with a long slug the table's own name reaches
-- PostgreSQL's 63-character limit, and a longer index name would be cut to the table's.
DO $$
DECLARE
    m record;
    index_expression text;
BEGIN
    FOR m IN SELECT slug, dimensions, distance, binary_quantization FROM embedding_models LOOP
        EXECUTE format(
            'CREATE TABLE IF NOT EXISTS %I ('
            ' fact_id bigint PRIMARY KEY REFERENCES facts (id) ON DELETE CASCADE,'
            ' chunk_id bigint NOT NULL UNIQUE REFERENCES chunks (id) ON DELETE CASCADE,'
            ' embedding vector(%s) NOT NULL,'
            ' truncated boolean NOT NULL DEFAULT false,'
            ' embedded_at timestamptz NOT NULL DEFAULT now())',
            'potential_fact_emb_' || m.slug, m.dimensions);
        IF m.binary_quantization THEN
            index_expression := format('((binary_quantize(embedding)::bit(%s)) bit_hamming_ops)',
                                       m.dimensions);
        ELSE
            index_expression := format('(embedding %s)', CASE m.distance
                WHEN 'cosine' THEN 'vector_cosine_ops'
                WHEN 'l2' THEN 'vector_l2_ops'
                ELSE 'vector_ip_ops' END);
        END IF;
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I USING hnsw %s',
                       'pfe_' || m.slug || '_hnsw',
                       'potential_fact_emb_' || m.slug, index_expression);
    END LOOP;
END
$$;
