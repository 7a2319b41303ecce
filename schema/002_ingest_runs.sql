-- 002: what ingest remembers between runs: runs, the URIs each walk saw, and outcomes.

CREATE TABLE ingest_runs (
    id                 bigserial PRIMARY KEY,
    source_id          bigint NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    started_at         timestamptz NOT NULL DEFAULT now(),
    finished_at        timestamptz,
    -- True only for a walk that ran to exhaustion. A --limit or a cancellation leaves it false,
    -- and only a completed walk may decide that something is missing.
    completed          boolean NOT NULL DEFAULT false,
    seen_count         integer NOT NULL DEFAULT 0,
    indexed_count      integer NOT NULL DEFAULT 0,
    stat_skipped_count integer NOT NULL DEFAULT 0,
    unchanged_count    integer NOT NULL DEFAULT 0,
    rejected_count     integer NOT NULL DEFAULT 0,
    failed_count       integer NOT NULL DEFAULT 0,
    placeholder_count  integer NOT NULL DEFAULT 0,
    deleted_count      integer NOT NULL DEFAULT 0,
    chunks_kept        integer NOT NULL DEFAULT 0,
    chunks_new         integer NOT NULL DEFAULT 0,
    chunks_deleted     integer NOT NULL DEFAULT 0,
    budget_files       integer NOT NULL DEFAULT 0,
    budget_bytes       bigint NOT NULL DEFAULT 0,
    note               text
);
CREATE INDEX ingest_runs_source_idx ON ingest_runs (source_id, started_at DESC);

-- Every URI a walk yielded, indexed, stat-skipped, failed or placeholder alike.
CREATE TABLE ingest_seen (
    run_id bigint NOT NULL REFERENCES ingest_runs (id) ON DELETE CASCADE,
    uri    text NOT NULL,
    PRIMARY KEY (run_id, uri)
);

-- Files that produced no document (no text, rejected by the quality gate, failed to extract),
-- with the stat, hash and extractor version they were judged at: they are not read again until
-- one of those changes.
CREATE TABLE ingest_outcomes (
    source_id         bigint NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    uri               text NOT NULL,
    outcome           text NOT NULL CHECK (outcome IN ('rejected', 'failed')),
    reason            text NOT NULL,
    -- NULL when the walk could not even stat it (an unreadable folder): tried again every run.
    size_bytes        bigint,
    mtime_ns          bigint,
    source_sha256     text,
    extractor         text,
    extractor_version integer,
    recorded_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source_id, uri)
);
