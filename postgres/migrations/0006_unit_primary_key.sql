-- Work units are named by (spec_id, key) alone (issue 4 performance).
--
-- Every row version of a unit (added, leased, finished) goes into every
-- full index of work_unit. The surrogate id's index took its entries in id
-- order, which is the order units were added, while units are leased and
-- finished in priority-then-key order; at a million queued units each of
-- those writes landed on a random leaf page. One extra index on id cost
-- 6-12% of drain-100 throughput at a million units and nothing measurable
-- at ten thousand. (spec_id, key) was unique already and its entries are
-- written in the order units are leased, so it becomes the primary key,
-- the tables that pointed at units by id point at (spec_id, key), and the
-- id column goes.

-- Outstanding units of workers.
ALTER TABLE worker_unit ADD COLUMN spec_id bigint, ADD COLUMN key bytea;
UPDATE worker_unit w SET spec_id = u.spec_id, key = u.key FROM work_unit u WHERE u.id = w.unit_id;
ALTER TABLE worker_unit DROP COLUMN unit_id; -- with its primary key, foreign key and index
ALTER TABLE worker_unit ALTER COLUMN spec_id SET NOT NULL, ALTER COLUMN key SET NOT NULL;
ALTER TABLE worker_unit ADD PRIMARY KEY (worker_id, spec_id, key);
CREATE INDEX worker_unit_unit ON worker_unit (spec_id, key);

-- Dependency edges, by the dependent unit.
ALTER TABLE unit_dep ADD COLUMN spec_id bigint, ADD COLUMN key bytea;
UPDATE unit_dep e SET spec_id = u.spec_id, key = u.key FROM work_unit u WHERE u.id = e.unit_id;
ALTER TABLE unit_dep DROP COLUMN unit_id; -- with its primary key and foreign key
ALTER TABLE unit_dep ALTER COLUMN spec_id SET NOT NULL, ALTER COLUMN key SET NOT NULL;
ALTER TABLE unit_dep ADD PRIMARY KEY (spec_id, key, dep_spec, dep_key);

ALTER TABLE work_unit DROP CONSTRAINT work_unit_pkey;
ALTER TABLE work_unit ADD PRIMARY KEY (spec_id, key);
ALTER TABLE work_unit DROP CONSTRAINT work_unit_spec_id_key_key;
ALTER TABLE work_unit DROP COLUMN id;

ALTER TABLE worker_unit ADD FOREIGN KEY (spec_id, key) REFERENCES work_unit (spec_id, key) ON DELETE CASCADE;
ALTER TABLE unit_dep ADD FOREIGN KEY (spec_id, key) REFERENCES work_unit (spec_id, key) ON DELETE CASCADE;

-- resolve_finished_units (migration 0004) with the dependents named by
-- (spec_id, key).
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
    UPDATE work_unit u SET status = 1
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
