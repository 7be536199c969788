-- Initial schema of the postgres backend (issue 4).
--
-- Conventions: names, keys and worker ids are bytea (arbitrary bytes,
-- ordered bytewise) with a *_text flag recording whether they arrived as
-- CBOR text; user data is bytea holding one CBOR item verbatim; times are
-- bigint nanoseconds since the Unix epoch (NULL = zero time) so that
-- values given by the backend's Clock round-trip exactly.

CREATE TABLE namespace (
    id   bigserial PRIMARY KEY,
    name bytea NOT NULL UNIQUE
);

CREATE TABLE work_spec (
    id                bigserial PRIMARY KEY,
    namespace_id      bigint  NOT NULL REFERENCES namespace (id) ON DELETE CASCADE,
    name              bytea   NOT NULL,
    name_text         boolean NOT NULL,
    definition        bytea   NOT NULL,
    -- Control settings (coordinate.WorkSpecMeta).
    priority          integer NOT NULL,
    weight            integer NOT NULL,
    paused            boolean NOT NULL,
    continuous        boolean NOT NULL,
    can_be_continuous boolean NOT NULL,
    interval_ns       bigint  NOT NULL,
    next_continuous   bigint,
    max_running       integer NOT NULL,
    max_getwork       integer NOT NULL,
    max_retries       integer NOT NULL,
    min_gb            float8  NOT NULL,
    then_name         bytea   NOT NULL,
    then_preempts     boolean NOT NULL,
    runtime           bytea   NOT NULL,
    UNIQUE (namespace_id, name)
);

-- Work-unit statuses are the legacy codes: 1 available (including delayed
-- units, see not_before), 2 blocked, 3 pending, 4 finished, 5 failed.
CREATE TABLE work_unit (
    id          bigserial PRIMARY KEY,
    spec_id     bigint   NOT NULL REFERENCES work_spec (id) ON DELETE CASCADE,
    key         bytea    NOT NULL,
    key_text    boolean  NOT NULL,
    data        bytea    NOT NULL,
    status      smallint NOT NULL CHECK (status BETWEEN 1 AND 5),
    priority    float8   NOT NULL DEFAULT 0,
    -- The legacy lease_time: lease expiry while pending, completion time
    -- when finished or failed.
    expires     bigint,
    worker      bytea,
    worker_text boolean,
    lease_id    bigint,
    not_before  bigint,
    attempts    integer  NOT NULL DEFAULT 0,
    grp         bytea,
    UNIQUE (spec_id, key)
);

-- get_work: the best available units of one spec.
CREATE INDEX work_unit_available ON work_unit (spec_id, priority DESC, key) WHERE status = 1;
-- The lease-expiry sweep.
CREATE INDEX work_unit_pending_expiry ON work_unit (expires) WHERE status = 3;
-- Retention (archive) and listing completed units.
CREATE INDEX work_unit_completed ON work_unit (spec_id, status, expires) WHERE status IN (4, 5);
-- Listing by other statuses.
CREATE INDEX work_unit_other ON work_unit (spec_id, status) WHERE status IN (2, 3);
CREATE INDEX work_unit_group ON work_unit (grp, spec_id) WHERE grp IS NOT NULL;

CREATE SEQUENCE lease_id_seq;

-- Per-spec unit counts by stored status, kept in the same transactions as
-- the units they count so count_work_units and the scheduler never scan
-- units. Each spec/status has up to 64 slots; a connection writes the slot
-- pg_backend_pid() % 64, so concurrent transactions rarely wait on the
-- same counter row. The count is the sum over slots.
CREATE TABLE unit_count (
    spec_id bigint   NOT NULL REFERENCES work_spec (id) ON DELETE CASCADE,
    status  smallint NOT NULL,
    slot    smallint NOT NULL,
    n       bigint   NOT NULL,
    PRIMARY KEY (spec_id, status, slot)
);

-- Units dropped by retention still count in count_work_units.
CREATE TABLE archived_count (
    spec_id bigint   NOT NULL REFERENCES work_spec (id) ON DELETE CASCADE,
    status  smallint NOT NULL,
    n       bigint   NOT NULL,
    PRIMARY KEY (spec_id, status)
);

CREATE TABLE worker (
    id           bigserial PRIMARY KEY,
    namespace_id bigint  NOT NULL REFERENCES namespace (id) ON DELETE CASCADE,
    name         bytea   NOT NULL,
    name_text    boolean NOT NULL,
    mode         bytea   NOT NULL,
    data         bytea   NOT NULL,
    parent       bytea,
    parent_text  boolean,
    last_heard   bigint  NOT NULL,
    expires      bigint  NOT NULL,
    UNIQUE (namespace_id, name)
);
CREATE INDEX worker_parent ON worker (namespace_id, parent) WHERE parent IS NOT NULL;
CREATE INDEX worker_expires ON worker (expires);

-- The units get_work handed to a registered worker that are not yet
-- finished or failed (SEMANTICS §11.3).
CREATE TABLE worker_unit (
    worker_id bigint NOT NULL REFERENCES worker (id) ON DELETE CASCADE,
    unit_id   bigint NOT NULL REFERENCES work_unit (id) ON DELETE CASCADE,
    seq       bigserial,
    PRIMARY KEY (worker_id, unit_id)
);
CREATE INDEX worker_unit_unit ON worker_unit (unit_id);
