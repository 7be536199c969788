-- Work-unit dependencies and groups (issue 6).

-- A unit's dependencies not yet FINISHED, by reference (the unit depended
-- on may not exist yet). An edge disappears when its target finishes.
CREATE TABLE unit_dep (
    unit_id      bigint  NOT NULL REFERENCES work_unit (id) ON DELETE CASCADE,
    namespace_id bigint  NOT NULL REFERENCES namespace (id) ON DELETE CASCADE,
    dep_spec     bytea   NOT NULL,
    dep_key      bytea   NOT NULL,
    seq          integer NOT NULL, -- position in the depends_on list given
    PRIMARY KEY (unit_id, dep_spec, dep_key)
);
-- The dependents of a unit that finishes, fails or is deleted.
CREATE INDEX unit_dep_target ON unit_dep (namespace_id, dep_spec, dep_key);

-- The unit was failed because a dependency failed; retrying that
-- dependency blocks it again.
ALTER TABLE work_unit ADD COLUMN dep_failed boolean NOT NULL DEFAULT false;

-- When a unit of each group last changed status (GroupStatus).
CREATE TABLE unit_group (
    namespace_id  bigint NOT NULL REFERENCES namespace (id) ON DELETE CASCADE,
    name          bytea  NOT NULL,
    last_progress bigint NOT NULL,
    PRIMARY KEY (namespace_id, name)
);
