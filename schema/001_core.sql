-- 001: the corpus tables ingest writes: sources, authors, documents, chunks.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE sources (
    id           bigserial PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    kind         text NOT NULL CHECK (kind IN ('files', 'mail', 'messages')),
    corpus_class text NOT NULL CHECK (corpus_class IN ('document', 'code', 'communication')),
    roots        text[] NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE authors (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL,
    email      text,
    -- The owner, by the configured identity: what separates "authored" from "received".
    is_self    boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT authors_name_email UNIQUE NULLS NOT DISTINCT (name, email)
);

CREATE TABLE documents (
    id                   bigserial PRIMARY KEY,
    source_id            bigint NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    -- file:///abs/path for files; <chat.db path>#<chat GUID> for a Messages thread.
    uri                  text NOT NULL,
    corpus_class         text NOT NULL
                         CHECK (corpus_class IN ('document', 'code', 'communication')),
    title                text,
    content              text NOT NULL,
    -- Two hashes, deliberately not redundant: the raw bytes let an unchanged file be skipped
    -- without opening it; the extracted text lets chunks be rebuilt when an extractor improves.
    source_sha256        text NOT NULL,
    content_sha256       text NOT NULL,
    size_bytes           bigint NOT NULL,
    mtime_ns             bigint NOT NULL,
    extractor            text NOT NULL,
    extractor_version    integer NOT NULL,
    metadata             jsonb NOT NULL DEFAULT '{}',
    author_id            bigint REFERENCES authors (id) ON DELETE SET NULL,
    attribution          text NOT NULL DEFAULT 'unknown'
                         CHECK (attribution IN ('authored', 'received', 'unknown')),
    attribution_signal   text,
    attribution_evidence jsonb NOT NULL DEFAULT '{}',
    -- tsvector values are capped at 1 MB; the head of a very long document is enough for
    -- document-level matching, and chunks carry their own vectors for search.
    fts                  tsvector GENERATED ALWAYS AS (
                             to_tsvector('english',
                                         coalesce(title, '') || ' ' || left(content, 200000))
                         ) STORED,
    indexed_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT documents_source_uri UNIQUE (source_id, uri)
);
CREATE INDEX documents_author_idx ON documents (author_id);
CREATE INDEX documents_corpus_class_idx ON documents (corpus_class);
CREATE INDEX documents_fts_idx ON documents USING gin (fts);

CREATE TABLE chunks (
    id           bigserial PRIMARY KEY,
    document_id  bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    ord          integer NOT NULL,
    text         text NOT NULL,
    text_sha256  text NOT NULL,
    start_offset integer NOT NULL,
    end_offset   integer NOT NULL,
    heading      text,
    -- The splitter and its settings, e.g. recursive:1000/100 or code:python:1500/150. A new
    -- signature rebuilds the document's chunks even when neither hash changed.
    chunker      text NOT NULL,
    modality     text NOT NULL DEFAULT 'text' CHECK (modality IN ('text', 'image')),
    -- Set for the chunk a distilled fact owns; the facts table and its key come later.
    fact_id      bigint,
    metadata     jsonb NOT NULL DEFAULT '{}',
    tsv          tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (end_offset >= start_offset)
);
-- Content chunks are numbered within their document; fact chunks are not part of that order.
CREATE UNIQUE INDEX chunks_document_ord_idx ON chunks (document_id, ord) WHERE fact_id IS NULL;
CREATE INDEX chunks_document_idx ON chunks (document_id);
CREATE INDEX chunks_fact_idx ON chunks (fact_id) WHERE fact_id IS NOT NULL;
CREATE INDEX chunks_tsv_idx ON chunks USING gin (tsv);
