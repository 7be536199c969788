-- Workers that asked to lose their leases when their record goes
-- (ownerdeath.go, coordinate.ReleasesLeasesOnExit).

-- Shortens the leases worker $1 (name $2) still holds to end at $3 (ns).
-- name: owner_end_leases
UPDATE work_unit u SET expires = $3
    FROM worker_unit wu
    WHERE wu.worker_id = $1 AND u.spec_id = wu.spec_id AND u.key = wu.key
        AND u.status = 3 AND u.worker = $2 AND u.expires > $3

-- name: owners_cols
SELECT w.id, w.name, w.data FROM worker w

-- The workers of any namespace whose record expired before $1 (ns), locked.
-- name: owners_expired_all
{{owners_cols}} WHERE w.expires < $1 ORDER BY w.id FOR UPDATE

-- The workers of namespace $1 whose record expired before $2 (ns), locked.
-- name: owners_expired
{{owners_cols}} WHERE w.namespace_id = $1 AND w.expires < $2 ORDER BY w.id FOR UPDATE

-- Worker $2 of namespace $1, locked.
-- name: owner_named
{{owners_cols}} WHERE w.namespace_id = $1 AND w.name = $2 ORDER BY w.id FOR UPDATE

-- name: owner_delete
DELETE FROM worker WHERE id = $1
