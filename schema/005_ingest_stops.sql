-- 005: a run that did not finish says why: an error, a signal, a cancellation, --limit, an
-- unreadable chat.db. NULL for a run that completed.

ALTER TABLE ingest_runs ADD COLUMN stop_reason text;
