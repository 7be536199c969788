-- unit_count_add is the one definition of how a change of unit counts is
-- written: into this connection's slot row of each (spec, status) cell
-- (pg_backend_pid() % 64, so concurrent transactions rarely wait for one
-- another's counter rows), in (spec, status) order so they lock counter
-- rows in the same order, cells with no change skipped. countDelta
-- (counts.go) calls it. The hot statements (queries/claim.sql,
-- claim_many.sql, finish.sql, sweep.sql and resolve_finished_units) write
-- the same upsert inline inside their CTEs: a PL/pgSQL call there cost
-- 8-20 us per statement on the hot path (an SQL-language function, planned
-- again on every call, about 100 us); TestUnitCountUpsertsAgree keeps
-- their slot and conflict clauses identical to this one.
CREATE FUNCTION unit_count_add(spec_ids bigint[], statuses smallint[], deltas bigint[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
    INSERT INTO unit_count (spec_id, status, slot, n)
    SELECT d.spec_id, d.status, (pg_backend_pid() % 64)::smallint, d.n
    FROM unnest(spec_ids, statuses, deltas) AS d (spec_id, status, n)
    WHERE d.n <> 0
    ORDER BY d.spec_id, d.status
    ON CONFLICT (spec_id, status, slot) DO UPDATE SET n = unit_count.n + EXCLUDED.n;
END
$fn$;
