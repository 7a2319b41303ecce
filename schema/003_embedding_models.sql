-- 003: the registry of embedding models. Each registered model owns an emb_<slug> table that
-- its registration creates (chunk_id primary key, ON DELETE CASCADE, an HNSW index).

CREATE TABLE embedding_models (
    id                  bigserial PRIMARY KEY,
    name                text NOT NULL UNIQUE,
    slug                text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9_]{1,48}$'),
    provider            text NOT NULL CHECK (provider IN ('ollama', 'lmstudio', 'llama_server')),
    host                text NOT NULL,
    model_id            text NOT NULL,
    dimensions          integer NOT NULL CHECK (dimensions > 0),
    modality            text NOT NULL DEFAULT 'text' CHECK (modality IN ('text', 'image')),
    distance            text NOT NULL DEFAULT 'cosine'
                        CHECK (distance IN ('cosine', 'l2', 'inner_product')),
    binary_quantization boolean NOT NULL DEFAULT false,
    is_default          boolean NOT NULL DEFAULT false,
    registered_at       timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX embedding_models_one_default_idx ON embedding_models (is_default)
    WHERE is_default;
