-- Expires the leases that ended before $1 (now, ns), in any namespace: the
-- unit becomes available again, BLOCKED if it still has dependencies
-- (coordinate.StillWaiting). This is coordinate.ExpireLease in SQL
-- (expires < now is coordinate.LeaseExpired, the max_retries test is
-- coordinate.RetriesExhausted): change them together. Units whose spec's
-- max_retries is exhausted are left to expireExhausted (sweep.go), which
-- calls ExpireLease itself (their data changes). Rows
-- another transaction holds are skipped (that transaction is changing them
-- anyway). Keeps unit_count in step. $2 is the most rows to expire at
-- once. The units are AVAILABLE since $1 (available_since, migration
-- 0009). The holder's outstanding entry keeps the lapsed lease's expiry
-- (worker_unit.lapsed, migration 0011). Answers how many leases it
-- expired, by spec, with the keys of the units it put back to BLOCKED
-- (NULL when none), which sweep.go checks again (deps_unblock_free).
WITH expired AS (
    SELECT u.spec_id, u.key, s.namespace_id, u.worker, u.expires, u.grp
    FROM work_unit u JOIN work_spec s ON s.id = u.spec_id
    WHERE u.status = 3 AND u.expires < $1
        AND NOT (s.max_retries > 0 AND u.attempts > s.max_retries)
    ORDER BY u.expires
    LIMIT $2
    FOR UPDATE OF u SKIP LOCKED
), upd AS (
    -- coordinate.StillWaiting: a unit leased by hand while BLOCKED goes
    -- back to BLOCKED, not AVAILABLE.
    UPDATE work_unit u SET status = w.status,
        available_since = CASE WHEN w.status = 1 THEN GREATEST($1, u.not_before) END,
        expires = NULL, worker = NULL, worker_text = NULL, lease_id = NULL
    FROM expired e, LATERAL (
        SELECT CASE WHEN EXISTS (SELECT 1 FROM unit_dep d WHERE d.spec_id = e.spec_id AND d.key = e.key)
            THEN 2 ELSE 1 END AS status
    ) w
    WHERE u.spec_id = e.spec_id AND u.key = e.key
    RETURNING u.spec_id, u.key, u.status
), lapsed AS (
    UPDATE worker_unit wu SET lapsed = e.expires
    FROM expired e JOIN worker w ON w.namespace_id = e.namespace_id AND w.name = e.worker
    WHERE wu.worker_id = w.id AND wu.spec_id = e.spec_id AND wu.key = e.key
), progressed AS (
    -- A status change is progress for the unit's group (the stall
    -- watchdog), as in claim.sql.
    INSERT INTO unit_group (namespace_id, name, last_progress)
    SELECT DISTINCT e.namespace_id, e.grp, $1::bigint FROM expired e WHERE e.grp IS NOT NULL
    ON CONFLICT (namespace_id, name) DO UPDATE
    SET last_progress = GREATEST(unit_group.last_progress, EXCLUDED.last_progress)
), counted AS (
    -- unit_count_add (migration 0008), inline: a function call costs here.
    INSERT INTO unit_count (spec_id, status, slot, n)
    SELECT d.spec_id, d.status, (pg_backend_pid() % 64)::smallint, d.n FROM (
        SELECT spec_id, status, count(*) AS n FROM upd GROUP BY spec_id, status
        UNION ALL
        SELECT spec_id, 3, -count(*) FROM upd GROUP BY spec_id
    ) d
    ON CONFLICT (spec_id, status, slot) DO UPDATE SET n = unit_count.n + EXCLUDED.n
)
SELECT spec_id, count(*), array_agg(key) FILTER (WHERE status = 2) FROM upd GROUP BY spec_id
