-- Adding work units (add.go, SEMANTICS §5.5).

-- Inserts the units of spec $1 whose keys are new (slot i of the arrays:
-- key, text flag, data, priority, not-before, group) as AVAILABLE since
-- $8 (now) or the end of their delay; returns the keys inserted.
-- name: units_insert_new
INSERT INTO work_unit (spec_id, key, key_text, data, status, priority, not_before, grp, available_since)
    SELECT $1, k, t, d, 1, p, nb, g, GREATEST($8::bigint, nb)
    FROM unnest($2::bytea[], $3::boolean[], $4::bytea[], $5::float8[], $6::bigint[], $7::bytea[]) AS i (k, t, d, p, nb, g)
    ON CONFLICT (spec_id, key) DO NOTHING
    RETURNING key

-- The units of spec $1 with keys in $2, locked in key order.
-- name: units_lock_existing
SELECT key, status, grp, not_before FROM work_unit
    WHERE spec_id = $1 AND key = ANY($2) ORDER BY key FOR UPDATE

-- The dependencies named (namespace $1, slot i: spec $2, key $3) that
-- exist, with their status, held FOR SHARE.
-- name: deps_targets
SELECT s.name, u.key, u.status
    FROM unnest($2::bytea[], $3::bytea[]) AS r (spec, key)
    JOIN work_spec s ON s.namespace_id = $1 AND s.name = r.spec
    JOIN work_unit u ON u.spec_id = s.id AND u.key = r.key
    ORDER BY s.name, u.key
    FOR SHARE OF u

-- Inserts units of spec $1 in any status (slot i: key, text flag, data,
-- status, priority, not-before, completion time, failed-by-dependency
-- flag, group); AVAILABLE ones since $11 (now) or the end of their delay.
-- name: units_insert
INSERT INTO work_unit (spec_id, key, key_text, data, status, priority,
        not_before, expires, dep_failed, grp, available_since)
    SELECT $1, k, t, d, s, p, nb, e, df, g, CASE WHEN s = 1 THEN GREATEST($11::bigint, nb) END
    FROM unnest($2::bytea[], $3::boolean[], $4::bytea[], $5::smallint[], $6::float8[], $7::bigint[],
        $8::bigint[], $9::boolean[], $10::bytea[]) AS i (k, t, d, s, p, nb, e, df, g)

-- Replaces existing units of spec $11 (slot i: key, data, status, priority
-- and whether given, not-before, whether to clear the lease, completion
-- time, failed-by-dependency flag, group); AVAILABLE ones since $12 (now)
-- or the end of their delay. The spec's priority bounds (migration 0012)
-- are widened to the units' new priorities and delays.
-- name: units_replace
WITH replaced AS (
    UPDATE work_unit u SET
            data = i.d,
            status = i.s,
            available_since = CASE WHEN i.s = 1 THEN GREATEST($12::bigint, i.nb) END,
            priority = CASE WHEN i.hp THEN i.p ELSE u.priority END,
            not_before = i.nb,
            expires = CASE WHEN i.c THEN i.e ELSE u.expires END,
            worker = CASE WHEN i.c THEN NULL ELSE u.worker END,
            worker_text = CASE WHEN i.c THEN NULL ELSE u.worker_text END,
            lease_id = CASE WHEN i.c THEN NULL ELSE u.lease_id END,
            dep_failed = CASE WHEN i.c THEN i.df ELSE u.dep_failed END,
            grp = i.g
        FROM unnest($1::bytea[], $2::bytea[], $3::smallint[], $4::float8[], $5::boolean[], $6::bigint[],
            $7::boolean[], $8::bigint[], $9::boolean[], $10::bytea[]) AS i (k, d, s, p, hp, nb, c, e, df, g)
        WHERE u.spec_id = $11 AND u.key = i.k
        RETURNING u.priority, u.not_before
)
SELECT widen_priority_bounds($11, min(priority), max(priority), bool_or(not_before IS NOT NULL)) FROM replaced

-- name: deps_drop
DELETE FROM unit_dep WHERE spec_id = $1 AND key = ANY($2)

-- Edges from units of spec $1 (namespace $2): slot i is the dependent key
-- $3, the dependency spec name $4 and key $5, its position $6.
-- name: deps_add
INSERT INTO unit_dep (spec_id, key, namespace_id, dep_spec, dep_key, seq)
    SELECT $1, u, $2, s, k, q FROM unnest($3::bytea[], $4::bytea[], $5::bytea[], $6::integer[]) AS e (u, s, k, q)
