-- Work specs (specs.go).

-- The work_spec columns scanSpec reads, in order (alias s). The hot
-- queries/candidates.sql lists them too.
-- name: spec_cols
s.id, s.name, s.name_text, s.definition, s.priority, s.weight, s.paused,
    s.continuous, s.can_be_continuous, s.interval_ns, s.next_continuous, s.max_running,
    s.max_getwork, s.max_retries, s.min_gb, s.then_name, s.then_preempts, s.runtime,
    s.controlled

-- A spec s's available and pending units from unit_count (no unit scan),
-- as columns c.available and c.pending (NULL: none): the scheduler's
-- counts, for queries/candidates.sql and queries/claim_guard.sql.
-- name: spec_counts
LEFT JOIN LATERAL (
    SELECT sum(n) FILTER (WHERE status = 1) AS available,
           sum(n) FILTER (WHERE status = 3) AS pending
    FROM unit_count WHERE spec_id = s.id AND status IN (1, 3)
) c ON true

-- Spec $2 of namespace $1.
-- name: spec_get
SELECT {{spec_cols}} FROM work_spec s WHERE s.namespace_id = $1 AND s.name = $2

-- name: spec_get_for_update
SELECT {{spec_cols}} FROM work_spec s WHERE s.namespace_id = $1 AND s.name = $2 FOR UPDATE

-- The specs of namespace $1 named $2 or after, in name order, at most $3
-- (NULL: all).
-- name: specs_list
SELECT {{spec_cols}} FROM work_spec s WHERE s.namespace_id = $1 AND s.name >= $2 ORDER BY s.name LIMIT $3

-- Creates spec ($2, $3) of namespace $1 with definition $4 and the
-- control settings derived from it ($5-$17), or replaces them all but
-- next_continuous; none is marked as set by control_work_spec.
-- name: spec_set
INSERT INTO work_spec AS s (namespace_id, name, name_text, definition,
        priority, weight, paused, continuous, can_be_continuous, interval_ns, next_continuous,
        max_running, max_getwork, max_retries, min_gb, then_name, then_preempts, runtime)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, $11, $12, $13, $14, $15, $16, $17)
    ON CONFLICT (namespace_id, name) DO UPDATE SET definition = EXCLUDED.definition, priority = EXCLUDED.priority, weight = EXCLUDED.weight,
        paused = EXCLUDED.paused, continuous = EXCLUDED.continuous,
        can_be_continuous = EXCLUDED.can_be_continuous, interval_ns = EXCLUDED.interval_ns,
        max_running = EXCLUDED.max_running, max_getwork = EXCLUDED.max_getwork,
        max_retries = EXCLUDED.max_retries, min_gb = EXCLUDED.min_gb,
        then_name = EXCLUDED.then_name, then_preempts = EXCLUDED.then_preempts,
        runtime = EXCLUDED.runtime, controlled = 0
    RETURNING {{spec_cols}}

-- name: spec_id
SELECT id FROM work_spec WHERE namespace_id = $1 AND name = $2

-- The ids of specs named by (namespace $1[i], name $2[i]) pairs, for
-- chaining (chains.go): one row (namespace, name, id) per spec that
-- exists.
-- name: spec_ids
SELECT s.namespace_id, s.name, s.id FROM work_spec s
JOIN unnest($1::bigint[], $2::bytea[]) AS t (namespace_id, name)
    ON s.namespace_id = t.namespace_id AND s.name = t.name

-- control_work_spec: the settings it may change, of spec $1, and which
-- it has set ($7, migration 0010).
-- name: spec_control
UPDATE work_spec SET paused = $2, continuous = $3, interval_ns = $4,
    max_running = $5, weight = $6, controlled = $7 WHERE id = $1

-- The groups of the units of spec $2 (namespace $1): deleting the spec
-- is progress of each, as in the memory backend.
-- name: spec_unit_groups
SELECT DISTINCT u.grp FROM work_unit u JOIN work_spec s ON s.id = u.spec_id
    WHERE s.namespace_id = $1 AND s.name = $2 AND u.grp IS NOT NULL

-- name: spec_delete
DELETE FROM work_spec WHERE namespace_id = $1 AND name = $2

-- name: specs_clear
DELETE FROM work_spec WHERE namespace_id = $1
