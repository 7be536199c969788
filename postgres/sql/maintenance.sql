-- Schema migrations (migrate.go) and the maintenance the backend runs
-- itself (vacuum.go, analyze.go).

-- The session advisory lock $1 (bigint key space), waiting for it.
-- name: session_lock
SELECT pg_advisory_lock($1)

-- name: session_unlock
SELECT pg_advisory_unlock($1)

-- name: migrations_table
CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name    text NOT NULL
    )

-- name: migrations_applied
SELECT version FROM schema_migrations

-- name: migration_applied
INSERT INTO schema_migrations (version, name) VALUES ($1, $2)

-- The session advisory lock $1 if it is free.
-- name: session_try_lock
SELECT pg_try_advisory_lock($1)

-- name: vacuum_units
VACUUM work_unit

-- name: analyze_units
ANALYZE work_unit

-- The planner estimate of the rows of work_unit.
-- name: units_estimate
SELECT reltuples::float8 FROM pg_class WHERE oid = 'work_unit'::regclass
