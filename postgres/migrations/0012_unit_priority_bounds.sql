-- Bounds of the priorities of a spec's units, so the scheduler's read
-- (queries/candidates.sql) need not probe the best available unit of a
-- spec whose units all have one priority: every unit of spec s, whatever
-- its status, has a priority in [s.units_priority_low,
-- s.units_priority_high], and s.units_delayed is true if any may have a
-- not_before. They only widen (a spec whose units had several priorities
-- is probed as before); NULL: no unit yet. A unit keeps its priority
-- through every status change but two statements, so only those and the
-- inserts widen them: a statement trigger on INSERT (adds, chaining,
-- imports, continuous units, whatever statement inserts), and
-- units_replace (sql/add.sql) and units_prioritize (sql/units.sql), which
-- call widen_priority_bounds themselves; claims, finishes, retries,
-- expired leases and dependency resolution change no priority and pay
-- nothing (a row trigger on UPDATE cost every claim and finish a fetch of
-- the old row). docs/postgres.md, "Sixth pass: weighted specs".
ALTER TABLE work_spec ADD COLUMN units_priority_low float8, ADD COLUMN units_priority_high float8,
    ADD COLUMN units_delayed boolean NOT NULL DEFAULT false;

-- Widens the bounds of spec spec_id to take units of priorities low to
-- high, delayed or not (low NULL: no unit, nothing to do). The row is
-- written only when they do not hold already.
CREATE FUNCTION widen_priority_bounds(spec_id bigint, low float8, high float8, delayed boolean) RETURNS void
LANGUAGE sql AS $$
    UPDATE work_spec SET units_priority_low = LEAST(units_priority_low, low),
        units_priority_high = GREATEST(units_priority_high, high), units_delayed = units_delayed OR delayed
    WHERE id = spec_id AND low IS NOT NULL AND (units_priority_low IS NULL OR low < units_priority_low
        OR high > units_priority_high OR (delayed AND NOT units_delayed))
$$;

SELECT widen_priority_bounds(spec_id, min(priority), max(priority), bool_or(not_before IS NOT NULL))
FROM work_unit GROUP BY spec_id;

-- The inserted units (transition table new_units): widen_priority_bounds
-- for each spec among them, written out as one statement. Calling the SQL
-- function once per spec cost every INSERT about 28 us (it is planned on
-- each call), this 9 us, an empty trigger 0.5 us (5,000 inserts of 4
-- units each; docs/postgres.md, "Sixth pass: weighted specs").
CREATE FUNCTION widen_priority_bounds_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE work_spec s SET units_priority_low = LEAST(s.units_priority_low, b.low),
        units_priority_high = GREATEST(s.units_priority_high, b.high), units_delayed = s.units_delayed OR b.delayed
    FROM (SELECT spec_id, min(priority) AS low, max(priority) AS high, bool_or(not_before IS NOT NULL) AS delayed
          FROM new_units GROUP BY spec_id) b
    WHERE s.id = b.spec_id AND (s.units_priority_low IS NULL OR b.low < s.units_priority_low
        OR b.high > s.units_priority_high OR (b.delayed AND NOT s.units_delayed));
    RETURN NULL;
END
$$;

CREATE TRIGGER work_unit_inserted AFTER INSERT ON work_unit
    REFERENCING NEW TABLE AS new_units FOR EACH STATEMENT EXECUTE FUNCTION widen_priority_bounds_inserted();
