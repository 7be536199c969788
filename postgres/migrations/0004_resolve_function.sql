-- Resolving the edges to finished units (issue 4 performance): the work
-- runs in a function that the committer only calls when some unit it
-- finished has dependents (resolveFinishedSQL in deps.go). $1-$3 are the
-- units (namespace, spec, key), $4 now (ns). Edges go only for units that
-- are FINISHED; blocked dependents left without edges become available,
-- keeping unit_count (this connection's slot) and unit_group in step.
CREATE FUNCTION resolve_finished_units(bigint[], bytea[], bytea[], bigint) RETURNS void
LANGUAGE sql VOLATILE AS $fn$
WITH r AS (
    SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) AS r (ns, spec, key)
), del AS (
    -- The status is a scalar subquery, read only for units that have
    -- dependents (as a join it could read every finished unit).
    DELETE FROM unit_dep e USING r
    WHERE e.namespace_id = r.ns AND e.dep_spec = r.spec AND e.dep_key = r.key
        AND (SELECT u.status FROM work_spec s JOIN work_unit u ON u.spec_id = s.id
            WHERE s.namespace_id = r.ns AND s.name = r.spec AND u.key = r.key) = 4
    RETURNING e.unit_id, e.namespace_id, e.dep_spec, e.dep_key
), ready AS (
    UPDATE work_unit u SET status = 1
    WHERE u.id IN (SELECT unit_id FROM del) AND u.status = 2
        AND NOT EXISTS (
            SELECT 1 FROM unit_dep e2
            WHERE e2.unit_id = u.id AND NOT EXISTS (
                SELECT 1 FROM del
                WHERE del.unit_id = e2.unit_id AND del.namespace_id = e2.namespace_id
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
