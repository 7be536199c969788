-- The scheduler's view of a namespace's runnable specs (those with
-- available units, and continuous ones): control settings
-- and unit counts from unit_count (no unit scan), and, when more than one
-- spec has available units or $4 is set, for each spec with available
-- units the priority of the best one that can be handed out at $3 (now,
-- ns): one probe of the partial index, NULL when all are delayed. With a
-- lone such spec there is nothing to compare, so the probe (which passes
-- the index entries of units claimed moments before) is left to the
-- claim. $1 namespace id, $2 spec-name filter (empty = all). The last
-- column says whether the spec was probed.
-- The spec columns are the fragment spec_cols and the counts spec_counts
-- (sql/specs.sql), which withFragments puts in; c's columns are the spec's,
-- then available, pending and the row's version (xmin:
-- postgres/specrows.go decodes the spec columns of a row it knows only
-- once).
WITH c AS (
    SELECT {{spec_cols}}, COALESCE(c.available, 0)::bigint AS available, COALESCE(c.pending, 0)::bigint AS pending,
        s.xmin AS version
    FROM work_spec s
    {{spec_counts}}
    WHERE s.namespace_id = $1 AND NOT s.paused AND s.weight > 0
        AND (cardinality($2::bytea[]) = 0 OR s.name = ANY($2))
        -- A spec without available units that is not continuous is not
        -- one the scheduler can choose (coordinate.ChooseWorkSpec's
        -- eligible): its row would be decoded and passed over.
        AND (c.available > 0 OR s.continuous)
), probe AS (
    SELECT $4::boolean OR count(*) FILTER (WHERE available > 0) > 1 AS probe_all FROM c
)
-- (SELECT probe_all FROM probe) is an InitPlan, computed once; a join with
-- probe was recomputed for every spec.
SELECT c.*, b.priority, c.available > 0 AND (SELECT probe_all FROM probe)
FROM c
LEFT JOIN LATERAL (
    SELECT u.priority FROM work_unit u
    WHERE c.available > 0 AND (SELECT probe_all FROM probe)
        AND u.spec_id = c.id AND u.status = 1 AND (u.not_before IS NULL OR u.not_before <= $3)
    ORDER BY u.priority DESC, u.key
    LIMIT 1
) b ON true
