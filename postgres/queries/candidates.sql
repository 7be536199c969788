-- The scheduler's view of a namespace's runnable specs: control settings
-- and unit counts from unit_count (no unit scan). $1 namespace id, $2
-- spec-name filter (empty = all).
-- The spec columns are spec_cols (sql/specs.sql), in the same order.
SELECT s.id, s.name, s.name_text, s.definition, s.priority, s.weight, s.paused,
    s.continuous, s.can_be_continuous, s.interval_ns, s.next_continuous, s.max_running,
    s.max_getwork, s.max_retries, s.min_gb, s.then_name, s.then_preempts, s.runtime,
    s.controlled, COALESCE(c.available, 0)::bigint, COALESCE(c.pending, 0)::bigint
FROM work_spec s
LEFT JOIN LATERAL (
    SELECT sum(n) FILTER (WHERE status = 1) AS available,
           sum(n) FILTER (WHERE status = 3) AS pending
    FROM unit_count WHERE spec_id = s.id AND status IN (1, 3)
) c ON true
WHERE s.namespace_id = $1 AND NOT s.paused AND s.weight > 0
    AND (cardinality($2::bytea[]) = 0 OR s.name = ANY($2))
