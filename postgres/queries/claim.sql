-- Leases up to $3 of the best units of spec $1 that can be handed out at
-- $2 (now, ns), their data within $8 bytes, to worker ($5, $6) until $4,
-- skipping rows other transactions hold, so concurrent callers never wait
-- for each other nor get the same unit. Keeps unit_count (in this
-- connection's slot) and, when the worker is registered in namespace $7,
-- its outstanding set, and the progress of the units' groups in step. The
-- picked keys are updated through an array so the plan is the primary
-- key's index whatever LIMIT the planner assumes (committer transactions
-- use generic plans).
-- available_since (migration 0009) is cleared: it means nothing once the
-- unit is leased, and a row version without it is 8 bytes smaller.
-- The /*guard...*/ comments are where schedguess.go puts the guard of a
-- claim made without the scheduler's read (queries/claim_guard.sql).
WITH /*guard*/ locked AS (
    SELECT key, priority, octet_length(data) AS size FROM work_unit
    WHERE spec_id = $1 AND status = 1 AND (not_before IS NULL OR not_before <= $2) /*guard_cond*/
    ORDER BY priority DESC, key
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), picked AS (
    -- coordinate.WithinBytes: the best units while their data stays
    -- within $8 bytes (0: no bound), and always the first. The rows left
    -- out stay AVAILABLE; their row locks end with the transaction.
    SELECT key FROM (
        SELECT key, row_number() OVER w AS nth, sum(size) OVER w AS upto
        FROM locked WINDOW w AS (ORDER BY priority DESC, key ROWS UNBOUNDED PRECEDING)
    ) b WHERE nth = 1 OR $8::bigint = 0 OR upto <= $8::bigint
), leased AS (
    UPDATE work_unit u SET status = 3, expires = $4, worker = $5, worker_text = $6,
        lease_id = nextval('lease_id_seq'), attempts = u.attempts + 1, available_since = NULL
    WHERE u.spec_id = $1 AND u.key = ANY (ARRAY(SELECT key FROM picked))
    RETURNING u.key, u.key_text, u.data, u.priority, u.lease_id, u.grp
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
    SELECT w.id, $1, leased.key FROM leased, worker w
    WHERE w.namespace_id = $7 AND w.name = $5 AND w.expires >= $2
    ON CONFLICT (worker_id, spec_id, key) DO UPDATE SET lapsed = NULL
        WHERE worker_unit.lapsed IS NOT NULL -- a new lease: none of its has lapsed
), progressed AS (
    INSERT INTO unit_group (namespace_id, name, last_progress)
    SELECT DISTINCT $7::bigint, grp, $2::bigint FROM leased WHERE grp IS NOT NULL
    ON CONFLICT (namespace_id, name) DO UPDATE
    SET last_progress = GREATEST(unit_group.last_progress, EXCLUDED.last_progress)
)
SELECT 0 AS req, key, key_text, data, priority, lease_id FROM leased /*guard_row*/
