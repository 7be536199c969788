-- claim.sql for several get_work requests on the same spec at once: slot i
-- of the arrays ($3 worker, $4 worker text flag, $5 lease expiry, $6 index
-- of the request in the batch) takes the i-th best unit of spec $1 that can
-- be handed out at $2 (now, ns), so earlier requests get the better units,
-- as if they had run one after another. $7 is the namespace. The picked
-- keys, in order, are zipped with the slots by a multi-array unnest: no
-- join on positions, which a generic plan may run as a nested loop.
-- The /*guard...*/ comments: as in claim.sql.
WITH /*guard*/ picked AS (
    SELECT priority, key FROM work_unit
    WHERE spec_id = $1 AND status = 1 AND (not_before IS NULL OR not_before <= $2) /*guard_cond*/
    ORDER BY priority DESC, key
    LIMIT cardinality($3::bytea[])
    FOR UPDATE SKIP LOCKED
), slots AS (
    SELECT * FROM unnest(ARRAY(SELECT key FROM picked ORDER BY priority DESC, key),
        $3::bytea[], $4::boolean[], $5::bigint[], $6::integer[]) AS a (key, worker, worker_text, expires, req)
    WHERE a.key IS NOT NULL
), leased AS (
    UPDATE work_unit u SET status = 3, expires = slots.expires, worker = slots.worker,
        worker_text = slots.worker_text, lease_id = nextval('lease_id_seq'), attempts = u.attempts + 1,
        available_since = NULL
    FROM slots
    WHERE u.spec_id = $1 AND u.key = slots.key
    RETURNING u.key, u.key_text, u.data, u.priority, u.lease_id, u.grp, u.worker, slots.req
), counted AS (
    -- unit_count_add (migration 0008), inline: a function call costs here.
    INSERT INTO unit_count (spec_id, status, slot, n)
    SELECT $1, d.status, (pg_backend_pid() % 64)::smallint, d.n FROM (
        SELECT 1 AS status, -count(*) AS n FROM leased
        UNION ALL SELECT 3, count(*) FROM leased
    ) d WHERE d.n <> 0
    ON CONFLICT (spec_id, status, slot) DO UPDATE SET n = unit_count.n + EXCLUDED.n
), outstanding AS (
    INSERT INTO worker_unit (worker_id, spec_id, key)
    SELECT w.id, $1, leased.key FROM leased
    JOIN worker w ON w.namespace_id = $7 AND w.name = leased.worker AND w.expires >= $2
    ON CONFLICT (worker_id, spec_id, key) DO UPDATE SET lapsed = NULL
        WHERE worker_unit.lapsed IS NOT NULL -- a new lease: none of its has lapsed
), progressed AS (
    INSERT INTO unit_group (namespace_id, name, last_progress)
    SELECT DISTINCT $7::bigint, grp, $2::bigint FROM leased WHERE grp IS NOT NULL
    ON CONFLICT (namespace_id, name) DO UPDATE
    SET last_progress = GREATEST(unit_group.last_progress, EXCLUDED.last_progress)
)
SELECT req, key, key_text, data, priority, lease_id FROM leased /*guard_row*/
