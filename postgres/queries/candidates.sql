-- The scheduler's view of a namespace's runnable specs: control settings
-- and unit counts from unit_count (no unit scan), and, when more than one
-- spec has available units or $4 is set, for each spec with available
-- units the priority of the best one that can be handed out at $3 (now,
-- ns): one probe of the partial index, NULL when all are delayed. With a
-- lone such spec there is nothing to compare, so the probe (which passes
-- the index entries of units claimed moments before) is left to the
-- claim. $1 namespace id, $2 spec-name filter (empty = all). The last
-- column says whether the spec was probed.
-- The spec columns are the fragment spec_cols (sql/specs.sql), which
-- withFragments puts in; c's columns are the spec's, then available,
-- pending and the row's version (xmin: postgres/specrows.go decodes the
-- spec columns of a row it knows only once).
-- The counts are the sums spec_counts takes, for all the namespace's specs
-- in one bitmap scan of unit_count's index and one visit of each of its
-- heap pages: a lateral sum per spec (spec_counts) re-read the same pages
-- once per spec and cost about twice as much with 100 specs
-- (docs/postgres.md, "Fifth pass: the 100-spec read").
WITH c AS (
    SELECT {{spec_cols}}, COALESCE(c.available, 0)::bigint AS available, COALESCE(c.pending, 0)::bigint AS pending,
        s.xmin AS version
    FROM work_spec s
    LEFT JOIN (
        SELECT spec_id, sum(n) FILTER (WHERE status = 1) AS available,
               sum(n) FILTER (WHERE status = 3) AS pending
        FROM unit_count
        WHERE spec_id = ANY (ARRAY(SELECT id FROM work_spec WHERE namespace_id = $1)) AND status IN (1, 3)
        GROUP BY spec_id
    ) c ON c.spec_id = s.id
    WHERE s.namespace_id = $1 AND NOT s.paused AND s.weight > 0
        AND (cardinality($2::bytea[]) = 0 OR s.name = ANY($2))
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
