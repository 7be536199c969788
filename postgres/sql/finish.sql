-- Finishing units in the fast statements (finish.go).

-- The bookkeeping of queries/finish.sql and queries/finish_chain.sql
-- after their UPDATE, written once. Each statement names the units it
-- finished in a CTE `done` (spec_id, key), its changes of unit counts in
-- `moved` (spec_id, status, n: a row per unit and change, added up here
-- per cell) and the groups of the units it wrote in `touched`
-- (namespace_id, grp, now; grp NULL for none). Removes the finished units
-- from the workers' outstanding sets, writes the counts into this
-- connection's slot of unit_count (unit_count_add, migration 0008,
-- inline: a function call costs here) and moves each group's last
-- progress forward: one statement each per batch, whatever its number
-- of units, in key order so concurrent batches lock rows in one order.
-- name: finish_bookkeeping
unlisted AS (
    DELETE FROM worker_unit w USING done WHERE w.spec_id = done.spec_id AND w.key = done.key
), counted AS (
    INSERT INTO unit_count (spec_id, status, slot, n)
    SELECT spec_id, status, (pg_backend_pid() % 64)::smallint, sum(n) FROM moved
    GROUP BY spec_id, status
    ORDER BY spec_id, status
    ON CONFLICT (spec_id, status, slot) DO UPDATE SET n = unit_count.n + EXCLUDED.n
), progressed AS (
    INSERT INTO unit_group (namespace_id, name, last_progress)
    SELECT namespace_id, grp, max(now) FROM touched WHERE grp IS NOT NULL
    GROUP BY namespace_id, grp
    ORDER BY namespace_id, grp
    ON CONFLICT (namespace_id, name) DO UPDATE
    SET last_progress = GREATEST(unit_group.last_progress, EXCLUDED.last_progress)
)
