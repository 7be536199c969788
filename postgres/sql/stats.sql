-- Monitoring reads (stats.go): the dashboard and /metrics.

-- Every spec of namespace $1 with its counts by status, archived
-- included (a row of NULL counts for a spec with none).
-- name: stats_specs
SELECT s.id, s.name, s.name_text, s.paused, s.continuous, c.status, c.n
    FROM work_spec s LEFT JOIN (
        SELECT spec_id, status, sum(n)::bigint AS n FROM (
            SELECT spec_id, status, n FROM unit_count
            UNION ALL SELECT spec_id, status, n FROM archived_count) x
        GROUP BY spec_id, status) c ON c.spec_id = s.id
    WHERE s.namespace_id = $1
    ORDER BY s.name, s.id

-- The specs (by name) of namespace $1 with AVAILABLE units, each with the earliest
-- available_since (migration 0009; NULL first: available since before
-- the column existed): the first entry of work_unit_available_since, one
-- index probe per spec.
-- name: stats_oldest_available
SELECT s.name, f.since FROM work_spec s
    CROSS JOIN LATERAL (
        SELECT u.available_since AS since FROM work_unit u
        WHERE u.spec_id = s.id AND u.status = 1
        ORDER BY u.available_since NULLS FIRST LIMIT 1) f
    WHERE s.namespace_id = $1

-- Which of the spec ids $1 still exist (events.go's bound).
-- name: specs_existing
SELECT id FROM work_spec WHERE id = ANY ($1)

-- The specs of namespace $1 with units in group $2, through the
-- work_unit_group index.
-- name: group_specs
SELECT {{spec_cols}} FROM work_spec s
    WHERE s.namespace_id = $1 AND s.id IN (SELECT spec_id FROM work_unit WHERE grp = $2)
    ORDER BY s.name

-- The units of spec $1 in group $2 in key order, at most $3 (NULL: all).
-- name: group_spec_units
SELECT {{unit_cols}} FROM work_unit u WHERE u.spec_id = $1 AND u.grp = $2 ORDER BY u.key LIMIT $3
