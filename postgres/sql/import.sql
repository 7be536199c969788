-- Importing a work spec with its units as they are (import.go).

-- Creates spec ($2, $3) of namespace $1 with definition $4 and all its
-- settings ($5-$18) as given, unless it exists; returns its id.
-- name: import_spec
INSERT INTO work_spec (namespace_id, name, name_text, definition,
        priority, weight, paused, continuous, can_be_continuous, interval_ns, next_continuous,
        max_running, max_getwork, max_retries, min_gb, then_name, then_preempts, runtime)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
    ON CONFLICT (namespace_id, name) DO NOTHING RETURNING id

-- Units of spec $1 in any status (slot i: key, text flag, data, status,
-- priority, lease or completion time, worker, worker text flag, attempts);
-- PENDING ones get a lease id, AVAILABLE ones are so since $11 (now).
-- name: import_units
INSERT INTO work_unit (spec_id, key, key_text, data, status, priority,
        expires, worker, worker_text, lease_id, attempts, available_since)
    SELECT $1, k, t, d, s, p, e, w, wt, CASE WHEN s = 3 THEN nextval('lease_id_seq') END, a,
        CASE WHEN s = 1 THEN $11::bigint END
    FROM unnest($2::bytea[], $3::boolean[], $4::bytea[], $5::smallint[], $6::float8[],
        $7::bigint[], $8::bytea[], $9::boolean[], $10::integer[]) AS i (k, t, d, s, p, e, w, wt, a)

-- name: import_archived
INSERT INTO archived_count (spec_id, status, n) VALUES ($1, $2, $3)
