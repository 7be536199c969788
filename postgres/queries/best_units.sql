-- The priority of the best unit of each spec $1 that can be handed out at
-- $2 (now, ns): one probe of the partial index per spec. Specs with
-- nothing to hand out now (only delayed units) are absent.
SELECT s.id, b.priority
FROM unnest($1::bigint[]) AS s (id)
CROSS JOIN LATERAL (
    SELECT u.priority FROM work_unit u
    WHERE u.spec_id = s.id AND u.status = 1 AND (u.not_before IS NULL OR u.not_before <= $2)
    ORDER BY u.priority DESC, u.key
    LIMIT 1
) b
