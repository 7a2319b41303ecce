-- 011: who holds a writer lock (garage/locks.py). The lock itself is a session-level advisory
-- lock, freed when its holder's session ends; a row here is only believed while pg_locks shows
-- its backend holding its key, so a row left by a holder that died misleads nobody.
-- Unlogged: nothing in it outlives the sessions it describes.

CREATE UNLOGGED TABLE writer_locks (
    lock_key    bigint PRIMARY KEY,
    scope       text NOT NULL,
    command     text NOT NULL,
    door        text,  -- NULL for a terminal; "Dagster run <id>" for a Dagster run
    pid         integer,
    host        text,
    backend_pid integer NOT NULL,
    since       timestamptz NOT NULL
);
