-- The backend itself (backend.go).

-- shared_buffers in pages (8 kB), which sizes the head warm.
-- name: shared_buffers
SELECT setting::int FROM pg_settings WHERE name = 'shared_buffers'

-- The schema the daemon's tables are in (sharedwork.go).
-- name: current_schema
SELECT current_schema()

-- The id of namespace $1, created when missing.
-- name: namespace_id
WITH ins AS (
        INSERT INTO namespace (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id)
    SELECT id FROM ins UNION ALL SELECT id FROM namespace WHERE name = $1 LIMIT 1

-- name: namespaces_list
SELECT name FROM namespace ORDER BY name
