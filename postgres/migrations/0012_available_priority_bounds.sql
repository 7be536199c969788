-- Bounds of the priorities of a spec's AVAILABLE units, so the scheduler's
-- read (queries/candidates.sql) need not probe the best unit of a spec
-- whose available units all have one priority: every AVAILABLE unit of
-- spec s has a priority in [s.available_low, s.available_high], and
-- s.available_delayed is true if any may have a not_before. The bounds
-- only widen (a spec whose units had several priorities is probed as
-- before); NULL: none known, probe. They are kept by triggers on
-- work_unit, so every path that makes a unit AVAILABLE or changes an
-- available unit's priority keeps them, whichever statement it runs
-- (adds, chaining, retries, expired leases, dependency resolution,
-- give-backs, prioritize_work_units, imports), in the same transaction.
-- docs/postgres.md, "Sixth pass: weighted specs".
ALTER TABLE work_spec ADD COLUMN available_low float8, ADD COLUMN available_high float8,
    ADD COLUMN available_delayed boolean NOT NULL DEFAULT false;

UPDATE work_spec s SET available_low = b.low, available_high = b.high, available_delayed = b.delayed
FROM (SELECT spec_id, min(priority) AS low, max(priority) AS high, bool_or(not_before IS NOT NULL) AS delayed
      FROM work_unit WHERE status = 1 GROUP BY spec_id) b
WHERE s.id = b.spec_id;

-- Widens the bounds of the specs of the inserted units (transition table
-- new_units) that became AVAILABLE outside them. A unit's row is written
-- by the statement that adds it, so the statement's units are read once.
CREATE FUNCTION widen_available_bounds() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE work_spec s SET available_low = LEAST(s.available_low, b.low),
        available_high = GREATEST(s.available_high, b.high),
        available_delayed = s.available_delayed OR b.delayed
    FROM (SELECT spec_id, min(priority) AS low, max(priority) AS high, bool_or(not_before IS NOT NULL) AS delayed
          FROM new_units WHERE status = 1 GROUP BY spec_id) b
    WHERE s.id = b.spec_id AND (s.available_low IS NULL OR b.low < s.available_low OR b.high > s.available_high
        OR (b.delayed AND NOT s.available_delayed));
    RETURN NULL;
END
$$;

CREATE TRIGGER work_unit_added_available AFTER INSERT ON work_unit
    REFERENCING NEW TABLE AS new_units FOR EACH STATEMENT EXECUTE FUNCTION widen_available_bounds();

-- The same for one updated unit: a row trigger whose WHEN clause (checked
-- without calling anything) passes only a unit that is AVAILABLE after the
-- update and was not, or whose priority or not_before changed; claims and
-- finishes, which take units out of AVAILABLE, never call it.
CREATE FUNCTION widen_available_bounds_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE work_spec s SET available_low = LEAST(s.available_low, NEW.priority),
        available_high = GREATEST(s.available_high, NEW.priority),
        available_delayed = s.available_delayed OR NEW.not_before IS NOT NULL
    WHERE s.id = NEW.spec_id AND (s.available_low IS NULL OR NEW.priority < s.available_low
        OR NEW.priority > s.available_high OR (NEW.not_before IS NOT NULL AND NOT s.available_delayed));
    RETURN NULL;
END
$$;

CREATE TRIGGER work_unit_made_available AFTER UPDATE ON work_unit FOR EACH ROW
    WHEN (NEW.status = 1 AND (OLD.status <> 1 OR OLD.priority <> NEW.priority
        OR OLD.not_before IS DISTINCT FROM NEW.not_before))
    EXECUTE FUNCTION widen_available_bounds_row();
