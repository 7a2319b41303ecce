-- 008: distilled facts. Potential facts that state the same claim are linked to one row of
-- distilled_facts (garage/clusters): within a document a restatement points at the longest
-- statement of it (facts.restates_fact_id), and every potential fact points at its group
-- (facts.distilled_fact_id). Nothing about a potential fact changes but these links.

CREATE TABLE distilled_facts (
    id                     bigserial PRIMARY KEY,
    fact_class             text NOT NULL,
    -- The member whose words stand for the group: the longest, or an anchor's first fact.
    representative_fact_id bigint REFERENCES facts (id) ON DELETE SET NULL,
    -- The model's one-sentence statement of a confirmed group; NULL when the group is kept
    -- without asking (tight, single, anchored).
    statement              text,
    -- single: one node; tight: members close enough to keep without asking; confirmed: the
    -- chat model stated the claim; pending: waiting for the model; anchor: a metadata value.
    status                 text NOT NULL
                           CHECK (status IN ('single', 'tight', 'confirmed', 'pending', 'anchor')),
    -- Anchored groups only: the metadata facts' key (author:<id>, address:<a>, subject:<s>).
    anchor_key             text UNIQUE,
    -- The clustering model (embedding_models.name) whose vectors grouped it.
    model                  text NOT NULL,
    nodes                  integer NOT NULL DEFAULT 0,
    spread                 real NOT NULL DEFAULT 0,  -- mean cosine distance of nodes to centroid
    radius                 real NOT NULL DEFAULT 0,  -- the farthest node's distance
    drift                  real NOT NULL DEFAULT 0,  -- centroid's distance from the seed
    -- sha256 over the sorted node ids: what a confirmation or a full run's "same members" is
    -- about.
    members_sha256         text NOT NULL DEFAULT '',
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CHECK ((status = 'anchor') = (anchor_key IS NOT NULL))
);
CREATE INDEX distilled_facts_class_idx ON distilled_facts (fact_class);
CREATE INDEX distilled_facts_statement_fts_idx ON distilled_facts
    USING gin (to_tsvector('english', coalesce(statement, '')));

ALTER TABLE facts
    ADD COLUMN restates_fact_id bigint REFERENCES facts (id) ON DELETE SET NULL,
    ADD COLUMN distilled_fact_id bigint REFERENCES distilled_facts (id) ON DELETE SET NULL,
    -- The clustering model this fact was last compared under: a fact with a vector and no
    -- such mark is new, and its document is compared again.
    ADD COLUMN grouped_under text;
CREATE INDEX facts_restates_idx ON facts (restates_fact_id) WHERE restates_fact_id IS NOT NULL;
CREATE INDEX facts_distilled_idx ON facts (distilled_fact_id) WHERE distilled_fact_id IS NOT NULL;

-- Each clustering run: a changed model or grouping setting makes the next one a full run.
CREATE TABLE cluster_runs (
    id              bigserial PRIMARY KEY,
    mode            text NOT NULL CHECK (mode IN ('full', 'incremental')),
    model           text NOT NULL,
    settings_sha256 text NOT NULL,
    started_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    report          jsonb NOT NULL DEFAULT '{}'
);

-- Every registered model gets fact_emb_<slug> (distilled vectors, keyed on the distilled fact);
-- models registered later get it from garage.embed.registry, next to their emb_<slug>. Under
-- the clustering model it holds the normalized centroid and the seed; under any other model
-- the normalized mean of the nodes' vectors there.
DO $$
DECLARE
    m record;
BEGIN
    FOR m IN SELECT slug, dimensions, distance, binary_quantization FROM embedding_models LOOP
        EXECUTE format(
            'CREATE TABLE IF NOT EXISTS %I ('
            ' distilled_fact_id bigint PRIMARY KEY'
            '   REFERENCES distilled_facts (id) ON DELETE CASCADE,'
            ' embedding vector(%s) NOT NULL,'
            ' seed vector(%s),'
            ' updated_at timestamptz NOT NULL DEFAULT now())',
            left('fact_emb_' || m.slug, 63), m.dimensions, m.dimensions);
        IF NOT m.binary_quantization THEN
            EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I USING hnsw (embedding %s)',
                           'fe_' || m.slug || '_hnsw', left('fact_emb_' || m.slug, 63),
                           CASE m.distance WHEN 'cosine' THEN 'vector_cosine_ops'
                               WHEN 'l2' THEN 'vector_l2_ops' ELSE 'vector_ip_ops' END);
        END IF;
    END LOOP;
END
$$;
