-- Schema migrations (migrate.go). The maintenance the backend runs itself
-- (VACUUM, ANALYZE) has its statements in cachekeep/sql/, and so has the
-- release of session_lock (cachekeep.Unlock).

-- The session advisory lock $1 (bigint key space), waiting for it.
-- name: session_lock
SELECT pg_advisory_lock($1)

-- name: migrations_table
CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name    text NOT NULL
    )

-- name: migrations_applied
SELECT version FROM schema_migrations

-- name: migration_applied
INSERT INTO schema_migrations (version, name) VALUES ($1, $2)
