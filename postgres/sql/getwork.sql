-- get_work beyond the hot claim (getwork.go).

-- The gate of a continuous spec $1 at $2 (ns): one caller moves
-- next_continuous on and creates the unit.
-- name: continuous_gate
UPDATE work_spec SET next_continuous = $2::bigint + interval_ns
    WHERE id = $1 AND continuous AND (next_continuous IS NULL OR next_continuous <= $2)

-- The synthetic unit $2 (text when $7) of spec $1, data $3, leased until
-- $4 to worker ($5, $6).
-- name: continuous_unit
INSERT INTO work_unit (spec_id, key, key_text, data, status, priority,
        expires, worker, worker_text, lease_id, attempts)
    VALUES ($1, $2, $7, $3, 3, 0, $4, $5, $6, nextval('lease_id_seq'), 1)
    ON CONFLICT (spec_id, key) DO NOTHING
    RETURNING lease_id

-- Lists unit ($4, $5) as outstanding for worker $2 of namespace $1 if it
-- is live at $3.
-- name: continuous_outstanding
INSERT INTO worker_unit (worker_id, spec_id, key)
    SELECT id, $4, $5 FROM worker WHERE namespace_id = $1 AND name = $2 AND expires >= $3

-- coordinate.WorkSpecMeta.MaxRunningValue in SQL, for a spec s whose
-- max_running is not 0: how many of its units may be pending at once.
-- name: max_running_value
(CASE WHEN s.max_running > 0 THEN s.max_running ELSE s.max_running + 1 END)

-- Whether spec $1 may have one more unit pending under its max_running.
-- name: max_running_room
SELECT s.max_running = 0 OR {{max_running_value}} > COALESCE((
        SELECT sum(c.n) FROM unit_count c WHERE c.spec_id = s.id AND c.status = 3), 0)
    FROM work_spec s WHERE s.id = $1

-- When work next becomes available by time alone in namespace $1: the
-- earliest not-before after $2 (ns) of a delayed unit (available_since,
-- migration 0009, one index probe per spec) or the earliest lease expiry
-- (the sweep's index; the sweep expires leases with expires < now), even
-- one already past but not yet swept. NULL when nothing is due.
-- name: next_due
SELECT least(
    (SELECT min(l.at) FROM work_spec s CROSS JOIN LATERAL (
        SELECT u.available_since AS at FROM work_unit u
        WHERE u.spec_id = s.id AND u.status = 1 AND u.available_since > $2
        ORDER BY u.available_since LIMIT 1) l
     WHERE s.namespace_id = $1),
    (SELECT u.expires + 1 FROM work_unit u JOIN work_spec s ON s.id = u.spec_id
     WHERE u.status = 3 AND s.namespace_id = $1
     ORDER BY u.expires LIMIT 1))
