-- When each AVAILABLE unit became runnable (for the oldest
-- available unit age per spec in /metrics, docs/operations.md, without a
-- scan of units per scrape).
--
-- available_since is the time (ns) a unit last became AVAILABLE -- added,
-- its lease lapsed, retried, its last dependency finished -- or the end
-- of its delay (not_before) if that is later; NULL on units that were
-- AVAILABLE before this migration (Stats counts those from the daemon's
-- start, as the memory backend does for units recovered from disk). Every
-- statement that makes a unit AVAILABLE sets it: add.sql, import.sql,
-- sweep.sql, write_units.sql and resolve_finished_units below. The index is partial:
-- a unit leaving AVAILABLE (a claim, the hot path) adds no entry to it,
-- and a unit entering it adds one at the right end of its spec's range
-- (times grow). Stats reads its first entry per spec.
ALTER TABLE work_unit ADD COLUMN available_since bigint;
CREATE INDEX work_unit_available_since ON work_unit (spec_id, available_since NULLS FIRST) WHERE status = 1;

-- resolve_finished_units (migration 0006) setting available_since on the
-- units it makes AVAILABLE; otherwise unchanged.
CREATE OR REPLACE FUNCTION resolve_finished_units(bigint[], bytea[], bytea[], bigint) RETURNS void
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
