-- Worker records (SEMANTICS §11), workers.go.

-- The worker columns scanWorker reads, in order.
-- name: worker_cols
w.id, w.name, w.name_text, w.mode, w.data, w.parent, w.parent_text, w.last_heard, w.expires

-- The records of namespace $1 whose expiry is before $2 (ns).
-- name: worker_expire
DELETE FROM worker WHERE namespace_id = $1 AND expires < $2

-- Creates or replaces the record of worker ($2, $3) in namespace $1:
-- mode $4, data $5, parent ($6, $7), heard at $8, expiring at $9.
-- name: worker_heartbeat
INSERT INTO worker (namespace_id, name, name_text, mode, data, parent, parent_text, last_heard, expires)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (namespace_id, name) DO UPDATE SET name_text = EXCLUDED.name_text,
    mode = EXCLUDED.mode, data = EXCLUDED.data, parent = EXCLUDED.parent,
    parent_text = EXCLUDED.parent_text, last_heard = EXCLUDED.last_heard, expires = EXCLUDED.expires

-- name: worker_unregister
DELETE FROM worker WHERE namespace_id = $1 AND name = $2

-- name: workers_list
SELECT {{worker_cols}} FROM worker w WHERE w.namespace_id = $1 ORDER BY w.name

-- The live record of worker $2 in namespace $1 at $3 (ns).
-- name: worker_get
SELECT {{worker_cols}} FROM worker w WHERE w.namespace_id = $1 AND w.name = $2 AND w.expires >= $3

-- Live workers with their outstanding units (one row per unit, or one
-- row of NULLs for a worker with none): the statements below add which
-- workers, with $1 namespace, $2 what to match, $3 now (ns).
-- name: workers_with_units
SELECT c.name, c.name_text, s.name, s.name_text, u.key, u.key_text,
    u.data, u.status, u.worker, u.worker_text, u.expires, wu.lapsed
FROM worker c
LEFT JOIN worker_unit wu ON wu.worker_id = c.id
LEFT JOIN work_unit u ON u.spec_id = wu.spec_id AND u.key = wu.key
LEFT JOIN work_spec s ON s.id = u.spec_id

-- Records that leases lapsed (expireInGo, update.go): $1 spec ids, $2
-- keys, $3 the holders' names, $4 the leases' expiries (ns), in the
-- holders' outstanding entries (worker_unit.lapsed, migration 0011; the
-- sweep does the same in queries/sweep.sql).
-- name: worker_unit_lapse
UPDATE worker_unit wu SET lapsed = r.lapsed
FROM unnest($1::bigint[], $2::bytea[], $3::bytea[], $4::bigint[]) AS r (spec_id, key, worker, lapsed)
JOIN work_spec s ON s.id = r.spec_id
JOIN worker w ON w.namespace_id = s.namespace_id AND w.name = r.worker
WHERE wu.worker_id = w.id AND wu.spec_id = r.spec_id AND wu.key = r.key

-- The live children of parent $2.
-- name: worker_children
{{workers_with_units}}
WHERE c.namespace_id = $1 AND c.parent = $2 AND c.expires >= $3
ORDER BY c.name, s.name, u.key

-- The live worker $2.
-- name: worker_units
{{workers_with_units}}
WHERE c.namespace_id = $1 AND c.name = $2 AND c.expires >= $3
ORDER BY c.name, s.name, u.key
