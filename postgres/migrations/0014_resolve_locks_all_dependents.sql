-- resolve_finished_units (migration 0013) locking the dependents of the
-- finished units whatever their status, not only the BLOCKED ones;
-- otherwise unchanged. A dependent leased while BLOCKED (update_work_unit
-- to PENDING) goes back to BLOCKED when its lease ends or is given back
-- if it still has edges (coordinate.StillWaiting): the transaction doing
-- that read the edge to a unit being finished still there, while the
-- finish, whose lock statement read the dependent as PENDING and so
-- skipped it, deleted the edge and left the dependent alone: it stayed
-- BLOCKED with no edge left. Now the finish waits for the other
-- transaction's lock and then sees the dependent BLOCKED, or the other
-- waits for the finish's lock (the sweep skips it) and then reads no edge.
-- TestConcurrentFinishAndReleaseOfLeasedDependent.
CREATE OR REPLACE FUNCTION resolve_finished_units(bigint[], bytea[], bytea[], bigint) RETURNS void
LANGUAGE sql VOLATILE AS $fn$
SELECT count(*) FROM (
    SELECT 1 FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) AS r (ns, spec, key)
    JOIN unit_dep e ON e.namespace_id = r.ns AND e.dep_spec = r.spec AND e.dep_key = r.key
    JOIN work_unit u ON u.spec_id = e.spec_id AND u.key = e.key
    ORDER BY u.spec_id, u.key
    FOR UPDATE OF u
) locked;
WITH r AS (
    SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) AS r (ns, spec, key)
), del AS (
    -- The status is a scalar subquery, read only for units that have
    -- dependents (as a join it could read every finished unit).
    DELETE FROM unit_dep e USING r
    WHERE e.namespace_id = r.ns AND e.dep_spec = r.spec AND e.dep_key = r.key
        AND (SELECT u.status FROM work_spec s JOIN work_unit u ON u.spec_id = s.id
            WHERE s.namespace_id = r.ns AND s.name = r.spec AND u.key = r.key) = 4
    RETURNING e.spec_id, e.key, e.namespace_id, e.dep_spec, e.dep_key
), ready AS (
    UPDATE work_unit u SET status = 1, available_since = GREATEST($4, u.not_before)
    FROM (SELECT DISTINCT spec_id, key FROM del) d
    WHERE u.spec_id = d.spec_id AND u.key = d.key AND u.status = 2
        AND NOT EXISTS (
            SELECT 1 FROM unit_dep e2
            WHERE e2.spec_id = u.spec_id AND e2.key = u.key AND NOT EXISTS (
                SELECT 1 FROM del
                WHERE del.spec_id = e2.spec_id AND del.key = e2.key
                    AND del.dep_spec = e2.dep_spec AND del.dep_key = e2.dep_key))
    RETURNING u.spec_id, u.grp
), counted AS (
    INSERT INTO unit_count (spec_id, status, slot, n)
    SELECT c.spec_id, c.status, (pg_backend_pid() % 64)::smallint, c.n FROM (
        SELECT spec_id, 1 AS status, count(*) AS n FROM ready GROUP BY spec_id
        UNION ALL SELECT spec_id, 2, -count(*) FROM ready GROUP BY spec_id
    ) c
    ON CONFLICT (spec_id, status, slot) DO UPDATE SET n = unit_count.n + EXCLUDED.n
)
INSERT INTO unit_group (namespace_id, name, last_progress)
SELECT DISTINCT s.namespace_id, ready.grp, $4::bigint FROM ready JOIN work_spec s ON s.id = ready.spec_id
WHERE ready.grp IS NOT NULL
ON CONFLICT (namespace_id, name) DO UPDATE
SET last_progress = GREATEST(unit_group.last_progress, EXCLUDED.last_progress);
$fn$;
