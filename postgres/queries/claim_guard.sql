-- The guard of a claim made without the scheduler's read
-- (postgres/schedguess.go): a CTE put in front of claim.sql or
-- claim_many.sql, one row when spec $1 is, at this statement's snapshot,
-- the only spec of namespace $7 that coordinate.ChooseWorkSpec may choose
-- for the request (filter $guard_filter, at $guard_now, ns), with the
-- settings the daemon checked the request against in Go
-- (soleSpecs.guess: max_getwork $guard_max_getwork, min_gb $guard_min_gb,
-- no runtime, no max_running). Without the row the claim leases nothing
-- and the get_work reads as it would have.
-- It mirrors coordinate.ChooseWorkSpec's eligible on candidates.sql's
-- rows (the same specs and counts): a spec can be chosen only if it has
-- available units or is ContinuousReady (getwork.go's choose), so when
-- no other spec of the filter has either and spec $1 has available
-- units and passes the request's rules (checked in Go on the same
-- settings), ChooseWorkSpec picks spec $1 whatever the priorities and
-- weights. The $guard_ names are numbered by schedguess.go.
guard AS (
    SELECT FROM (
        SELECT s.id, s.runtime, s.max_running, s.max_getwork, s.min_gb,
            COALESCE(c.available, 0) AS available,
            s.continuous AND COALESCE(c.available, 0) = 0 AND COALESCE(c.pending, 0) = 0
                AND (s.next_continuous IS NULL OR s.next_continuous <= $guard_now::bigint) AS continuous_ready
        FROM work_spec s
        {{spec_counts}}
        WHERE s.namespace_id = $7 AND NOT s.paused AND s.weight > 0
            AND (cardinality($guard_filter::bytea[]) = 0 OR s.name = ANY($guard_filter))
    ) c
    HAVING bool_or(c.id = $1 AND c.available > 0 AND octet_length(c.runtime) = 0 AND c.max_running = 0
            AND c.max_getwork = $guard_max_getwork::integer AND c.min_gb = $guard_min_gb::float8)
        AND NOT bool_or(c.id <> $1 AND (c.available > 0 OR c.continuous_ready))
),
