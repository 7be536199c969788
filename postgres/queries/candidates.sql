-- The scheduler's view of a namespace's runnable specs (those with
-- available units, and continuous ones): control settings
-- and unit counts from unit_count (no unit scan), and, when more than one
-- spec has available units or $4 is set, for each spec with available
-- units the priority of the best one that can be handed out at $3 (now,
-- ns): one probe of the partial index, NULL when all are delayed. With a
-- lone such spec there is nothing to compare, so the probe (which passes
-- the index entries of units claimed moments before) is left to the
-- claim. A spec whose units all have one priority, as the bounds
-- migration 0012 keeps say (and none has a not_before), is not probed
-- either: that priority is its best available unit's. $1 namespace id, $2 spec-name
-- filter (empty = all).
-- Each row is the spec's id, the row's version (xmin: postgres/specrows.go
-- decodes the settings of a version only once), available, pending, the
-- best priority, whether it was wanted (probed or known), whether the
-- scheduler may choose it (below), the read's horizon (the xmin of its snapshot: every version older than it was
-- committed before the read), and the spec's settings: the fragment spec_cols (sql/specs.sql,
-- which withFragments puts in) as one record, NULL when the version is
-- older than the horizon $5 of an earlier read (NULL $5: never). A daemon
-- that decoded every row of that read has those versions already, and the
-- columns of a row cost the server and the daemon more than its counts
-- do (docs/postgres.md, "Sixth pass: the weighted read in the daemon").
-- The counts are the fragment spec_counts.
--
-- Besides the specs the scheduler can choose, the read returns every
-- spec with a `then`, not chooseable: the simple then_preempts rule walks
-- a `then` path through specs it cannot choose (coordinate.ChooseWorkSpec,
-- preferSuccessors), so it needs their `then` and then_preempts. Such a
-- row has no counts (available and pending 0). A namespace without `then`
-- paths reads no more rows.
WITH c AS (
    SELECT s.id, COALESCE(c.available, 0)::bigint AS available, COALESCE(c.pending, 0)::bigint AS pending,
        s.xmin AS version,
        -- coordinate.ChooseWorkSpec's eligible passes over a spec without
        -- available units that is not continuous: its row would only be
        -- decoded and passed over.
        NOT s.paused AND s.weight > 0 AND (cardinality($2::bytea[]) = 0 OR s.name = ANY($2))
            AND (COALESCE(c.available, 0) > 0 OR s.continuous) AS chooseable,
        CASE WHEN s.units_priority_low = s.units_priority_high AND NOT s.units_delayed THEN s.units_priority_low END AS known_best,
        -- age() counts back from the same transaction for both: the row's
        -- version is not older than the horizon.
        CASE WHEN $5::xid IS NULL OR age(s.xmin) <= age($5::xid) THEN ROW({{spec_cols}}) END AS spec
    FROM work_spec s
    {{spec_counts}}
    WHERE s.namespace_id = $1
        AND ((NOT s.paused AND s.weight > 0 AND (cardinality($2::bytea[]) = 0 OR s.name = ANY($2))
                AND (c.available > 0 OR s.continuous))
            OR octet_length(s.then_name) > 0)
), probe AS (
    SELECT $4::boolean OR count(*) FILTER (WHERE chooseable AND available > 0) > 1 AS probe_all,
        xid(pg_snapshot_xmin(pg_current_snapshot())) AS horizon
    FROM c
)
-- (SELECT probe_all FROM probe) is an InitPlan, computed once; a join with
-- probe was recomputed for every spec.
SELECT c.id, c.version,
    CASE WHEN c.chooseable THEN c.available ELSE 0 END,
    CASE WHEN c.chooseable THEN c.pending ELSE 0 END,
    COALESCE(b.priority, CASE WHEN c.chooseable AND c.available > 0 AND (SELECT probe_all FROM probe) THEN c.known_best END),
    c.chooseable AND c.available > 0 AND (SELECT probe_all FROM probe), c.chooseable,
    (SELECT horizon FROM probe), c.spec
FROM c
LEFT JOIN LATERAL (
    SELECT u.priority FROM work_unit u
    WHERE c.chooseable AND c.available > 0 AND c.known_best IS NULL AND (SELECT probe_all FROM probe)
        AND u.spec_id = c.id AND u.status = 1 AND (u.not_before IS NULL OR u.not_before <= $3)
    ORDER BY u.priority DESC, u.key
    LIMIT 1
) b ON true
