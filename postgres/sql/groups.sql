-- Groups of work units (docs/dependencies.md), groups.go.

-- Units of group $2 in namespace $1, counted by stored status, with, at
-- $3 (now, ns), how many of the AVAILABLE ones wait out a delay (not
-- runnable: they do not make the group stalled) and when the last delay
-- of one that no longer waits ended (the end of a delay is progress:
-- docs/dependencies.md, the memory backend's group.lastProgress).
-- name: group_counts
SELECT u.status, count(*),
        count(*) FILTER (WHERE u.status = 1 AND u.not_before > $3),
        max(u.not_before) FILTER (WHERE u.status = 1 AND u.not_before <= $3)
    FROM work_unit u
    JOIN work_spec s ON s.id = u.spec_id
    WHERE u.grp = $2 AND s.namespace_id = $1
    GROUP BY u.status

-- name: group_last_progress
SELECT last_progress FROM unit_group WHERE namespace_id = $1 AND name = $2

-- Groups of namespace $1 with no progress since $2 (ns) that have
-- runnable units (AVAILABLE, no delay left at $3, now), through
-- unit_group and the work_unit_group index: the candidates GroupStatus
-- then checks.
-- name: groups_stalled
SELECT g.name FROM unit_group g
    WHERE g.namespace_id = $1 AND g.last_progress <= $2
    AND EXISTS (SELECT 1 FROM work_unit u JOIN work_spec s ON s.id = u.spec_id
        WHERE u.grp = g.name AND s.namespace_id = $1 AND u.status = 1
            AND (u.not_before IS NULL OR u.not_before <= $3))
    ORDER BY g.name

-- The unfinished units of group $2 in namespace $1, locked, for
-- cancel_group.
-- name: group_unfinished_units
SELECT u.spec_id, s.name, u.key, u.data, u.status FROM work_unit u
    JOIN work_spec s ON s.id = u.spec_id
    WHERE u.grp = $2 AND s.namespace_id = $1 AND u.status IN (1, 2, 3)
    ORDER BY u.spec_id, u.key
    FOR UPDATE OF u

-- Fails units ($1 spec ids, $2 keys) at $3 (ns) with new data $4, lease
-- gone.
-- name: units_fail_with_data
UPDATE work_unit u SET status = 5, data = r.data, expires = $3, lease_id = NULL
    FROM unnest($1::bigint[], $2::bytea[], $4::bytea[]) AS r (spec_id, key, data)
    WHERE u.spec_id = r.spec_id AND u.key = r.key
