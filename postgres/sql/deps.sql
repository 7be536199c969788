-- Dependencies between units (deps.go, docs/dependencies.md).

-- Locks the units depending on the units (slot i: namespace $1, spec $2,
-- key $3), whatever their status, in the order resolve_finished_units
-- locks them (migration 0014). A statement of its own: the statement after
-- it, which reads their statuses and their other dependencies, then takes
-- its snapshot once the locks are held, so it sees what a transaction
-- that held them (failing, retrying or finishing another dependency of
-- theirs) committed. Without it two retries of two failed dependencies of
-- one unit each saw the other still FAILED, and the unit stayed FAILED
-- (propagateFailures). The next statement may be queued in the same batch:
-- a statement of the pipeline starts once the one before it has ended.
-- name: deps_lock_dependents
SELECT u.spec_id FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) AS r (ns, spec, key)
    JOIN unit_dep e ON e.namespace_id = r.ns AND e.dep_spec = r.spec AND e.dep_key = r.key
    JOIN work_unit u ON u.spec_id = e.spec_id AND u.key = e.key
    ORDER BY u.spec_id, u.key
    FOR UPDATE OF u

-- The unfinished units depending on the units (slot i: namespace $1, spec
-- $2, key $3), locked, each once, with the first slot i through which it
-- was reached. The spec's name is read for each unit found, as in
-- deps_unfail.
-- name: deps_dependents_unfinished
SELECT u.spec_id, (SELECT s.name FROM work_spec s WHERE s.id = u.spec_id), u.key, u.data, u.status, u.grp, d.i
    FROM (SELECT DISTINCT ON (e.spec_id, e.key) e.spec_id, e.key, r.i
            FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) WITH ORDINALITY AS r (ns, spec, key, i)
            JOIN unit_dep e ON e.namespace_id = r.ns AND e.dep_spec = r.spec AND e.dep_key = r.key
            ORDER BY e.spec_id, e.key, r.i) d
    JOIN work_unit u ON u.spec_id = d.spec_id AND u.key = d.key
    WHERE u.status NOT IN (4, 5)
    ORDER BY u.spec_id, u.key
    FOR UPDATE OF u

-- Fails units ($1 spec ids, $2 keys) at $3 (ns) with new data $4 because a
-- dependency failed.
-- name: units_fail_dependents
UPDATE work_unit u SET status = 5, data = r.data, expires = $3,
        lease_id = NULL, dep_failed = true
    FROM unnest($1::bigint[], $2::bytea[], $4::bytea[]) AS r (spec_id, key, data)
    WHERE u.spec_id = r.spec_id AND u.key = r.key

-- Blocks again the units failed because a dependency failed that depend
-- on the units (slot i: namespace $1, spec $2, key $3), when none of
-- their dependencies is FAILED. No edge to the units given is left out of
-- that test: each was retried, or blocked again by this statement, earlier
-- in the transaction, so it is not FAILED, unless it failed again since (a
-- chain re-adding it); its dependents then stay FAILED, as in the memory
-- backend, which applies the retry and the failure in turn. The units are
-- found through their primary key whatever the statistics: taken when few
-- units were FAILED, they made the planner go through a partial index on
-- status, or through the spec id alone of a joined spec row, and blocking
-- 2,000 dependents again took a second. So status is cast, and the spec's
-- name is read for each unit updated.
-- name: deps_unfail
UPDATE work_unit u SET status = 2, dep_failed = false, expires = NULL,
        worker = NULL, worker_text = NULL, lease_id = NULL
    FROM (SELECT DISTINCT e.namespace_id, e.spec_id, e.key
            FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) AS r (ns, spec, key)
            JOIN unit_dep e ON e.namespace_id = r.ns AND e.dep_spec = r.spec AND e.dep_key = r.key) d
    WHERE u.spec_id = d.spec_id AND u.key = d.key AND u.status::integer = 5 AND u.dep_failed
        AND NOT EXISTS (
            SELECT 1 FROM unit_dep e2
            JOIN work_spec s2 ON s2.namespace_id = e2.namespace_id AND s2.name = e2.dep_spec
            JOIN work_unit u2 ON u2.spec_id = s2.id AND u2.key = e2.dep_key
            WHERE e2.spec_id = u.spec_id AND e2.key = u.key AND u2.status::integer = 5)
    RETURNING u.spec_id, d.namespace_id, (SELECT s.name FROM work_spec s WHERE s.id = u.spec_id), u.key, u.grp

-- The edges to the units (namespace $1, slot i: spec $2, key $3).
-- name: deps_dependents_of
SELECT e.dep_spec, e.dep_key, s.name, e.key
    FROM unnest($2::bytea[], $3::bytea[]) AS r (spec, key)
    JOIN unit_dep e ON e.namespace_id = $1 AND e.dep_spec = r.spec AND e.dep_key = r.key
    JOIN work_spec s ON s.id = e.spec_id
    ORDER BY s.name, e.key

-- The edges from the units of spec $1 with keys in $2, in order.
-- name: deps_of_units
SELECT key, dep_spec, dep_key FROM unit_dep
    WHERE spec_id = $1 AND key = ANY($2) ORDER BY key, seq

-- Makes AVAILABLE since $3 (ns) the units (spec $1[i], key $2[i]) that
-- the lease sweep put back to BLOCKED and that have no edge left. The
-- sweep (queries/sweep.sql) reads the edges at its statement's snapshot:
-- a finish that deleted a unit's last edge and committed while that one
-- statement ran, before it locked the unit, left the unit BLOCKED with no
-- edge. This later statement, in the sweep's transaction
-- (sweep.go, sweepOnce), sees the deletion. A unit that another
-- transaction changes meanwhile is re-checked on its new version (status
-- 2). Keeps unit_count and the groups' progress in step.
-- name: deps_unblock_free
WITH ready AS (
    UPDATE work_unit u SET status = 1, available_since = GREATEST($3, u.not_before)
    FROM unnest($1::bigint[], $2::bytea[]) AS r (spec_id, key)
    WHERE u.spec_id = r.spec_id AND u.key = r.key AND u.status = 2
        AND NOT EXISTS (SELECT 1 FROM unit_dep d WHERE d.spec_id = u.spec_id AND d.key = u.key)
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
SELECT DISTINCT s.namespace_id, ready.grp, $3::bigint FROM ready JOIN work_spec s ON s.id = ready.spec_id
WHERE ready.grp IS NOT NULL
ON CONFLICT (namespace_id, name) DO UPDATE
SET last_progress = GREATEST(unit_group.last_progress, EXCLUDED.last_progress)
