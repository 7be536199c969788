-- Reading and changing work units outside the hot path (units.go).

-- The work_unit columns scanUnit reads, in order (alias u).
-- name: unit_cols
u.key, u.key_text, u.data, u.status, u.priority, u.expires,
    u.worker, u.worker_text, u.not_before, u.attempts, u.grp,
    EXISTS (SELECT 1 FROM unit_dep e WHERE e.spec_id = u.spec_id AND e.key = u.key)

-- The units of spec $1 with key >= $2 in key order, at most $3 (NULL: all).
-- name: units_by_key
SELECT {{unit_cols}} FROM work_unit u WHERE u.spec_id = $1 AND u.key >= $2
    ORDER BY u.key LIMIT $3

-- As units_by_key, only units with a status in $4, best priority first.
-- name: units_by_status
SELECT {{unit_cols}} FROM work_unit u WHERE u.spec_id = $1 AND u.key >= $2 AND u.status = ANY($4)
    ORDER BY u.priority DESC, u.key LIMIT $3

-- As units_by_status, in key order (WorkUnitQuery.KeyOrder): each page of
-- a keyset walk reads the primary key from $2 on.
-- name: units_by_status_key
SELECT {{unit_cols}} FROM work_unit u WHERE u.spec_id = $1 AND u.key >= $2 AND u.status = ANY($4)
    ORDER BY u.key LIMIT $3

-- The units of spec $1 with keys in $2.
-- name: units_get
SELECT {{unit_cols}} FROM work_unit u WHERE u.spec_id = $1 AND u.key = ANY($2)

-- Spec $1 units by status: unit_count cells and archived counts.
-- name: units_count
SELECT status, sum(n)::bigint FROM (
        SELECT status, n FROM unit_count WHERE spec_id = $1
        UNION ALL SELECT status, n FROM archived_count WHERE spec_id = $1) c
    GROUP BY status

-- Sets ($3) or adjusts by $4 the priority of the units of spec $1 with
-- keys in $2, and widens the spec's priority bounds (migration 0012) to
-- take them; returns the void of the widening and how many units changed.
-- name: units_prioritize
WITH prioritized AS (
    -- A key named twice is adjusted twice, as Python's loop over the keys
    -- did (and the memory backend does).
    UPDATE work_unit u SET priority = COALESCE($3::float8, u.priority + $4::float8 * k.n)
        FROM (SELECT key, count(*) AS n FROM unnest($2::bytea[]) AS key GROUP BY key) k
        WHERE u.spec_id = $1 AND u.key = k.key
        RETURNING u.priority
)
SELECT widen_priority_bounds($1, min(priority), max(priority), false), count(*) FROM prioritized

-- Deletes return each unit's status, key and group (a member deleted is
-- progress of its group, as in the memory backend).
-- name: units_delete_all
DELETE FROM work_unit WHERE spec_id = $1 RETURNING status, key, grp

-- The units of spec $1 with keys in $2 and, unless $3 is empty, a status
-- in $3.
-- name: units_delete_keys
DELETE FROM work_unit WHERE spec_id = $1 AND key = ANY($2)
    AND (cardinality($3::smallint[]) = 0 OR status = ANY($3)) RETURNING status, key, grp

-- name: units_delete_statuses
DELETE FROM work_unit WHERE spec_id = $1 AND status = ANY($2) RETURNING status, key, grp

-- Drops the archived counts of spec $1 (all when $2, else of the statuses
-- $3) and returns their sum.
-- name: archived_delete
WITH del AS (
        DELETE FROM archived_count WHERE spec_id = $1 AND ($2 OR status = ANY($3)) RETURNING n)
    SELECT COALESCE(sum(n), 0)::bigint FROM del

-- Archives the FINISHED and FAILED units of namespace $1 (specs named in
-- $2, all when empty) past the newest $3 per spec and status or completed
-- before $4 (ns); counts them by spec and status, with the spec's name,
-- the archived keys units still depend on and the groups they were in.
-- name: units_archive
WITH ranked AS (
        SELECT u.spec_id, u.key, u.status, u.expires,
            row_number() OVER (PARTITION BY u.spec_id, u.status ORDER BY u.expires DESC, u.key) AS rn
        FROM work_unit u JOIN work_spec s ON s.id = u.spec_id
        WHERE s.namespace_id = $1 AND (cardinality($2::bytea[]) = 0 OR s.name = ANY($2))
            AND u.status IN (4, 5)
    ), del AS (
        DELETE FROM work_unit u USING ranked r
        WHERE u.spec_id = r.spec_id AND u.key = r.key AND (r.rn > $3 OR r.expires < $4)
        RETURNING u.spec_id, u.status, u.key, u.grp
    )
    -- An archived unit is deleted (SEMANTICS §12): the FAILED ones some
    -- unit still waits for (retried while they were FAILED) are listed so
    -- their waiters fail, as for any deleted unit.
    -- The groups they leave are listed too: a member archived is progress
    -- of its group, as in the memory backend.
    SELECT d.spec_id, d.status, count(*), s.name,
        array_agg(d.key) FILTER (WHERE d.status = 5 AND EXISTS (
            SELECT 1 FROM unit_dep e WHERE e.namespace_id = $1 AND e.dep_spec = s.name AND e.dep_key = d.key)),
        array_agg(DISTINCT d.grp) FILTER (WHERE d.grp IS NOT NULL)
    FROM del d JOIN work_spec s ON s.id = d.spec_id
    GROUP BY d.spec_id, d.status, s.name

-- name: archived_add
INSERT INTO archived_count (spec_id, status, n)
    SELECT * FROM unnest($1::bigint[], $2::smallint[], $3::bigint[])
    ON CONFLICT (spec_id, status) DO UPDATE SET n = archived_count.n + EXCLUDED.n

-- Keys of spec $2 (namespace $1) that units depend on and that are units
-- of it now: what deleting the spec deletes. A key not added yet is not a
-- unit, and its waiters go on waiting.
-- name: deps_on_spec_units
SELECT DISTINCT e.dep_key FROM unit_dep e
    JOIN work_spec s ON s.namespace_id = e.namespace_id AND s.name = e.dep_spec
    JOIN work_unit u ON u.spec_id = s.id AND u.key = e.dep_key
    WHERE e.namespace_id = $1 AND e.dep_spec = $2
