-- The general update path's writes: slot i of the arrays is one unit
-- ($1 spec id, $2 key) and its new status, data, expires, worker, worker
-- text flag and lease id ($3-$8), as coordinate.ApplyUpdate computed them,
-- and the time of the change ($9): a unit made AVAILABLE is so since then
-- (available_since, migration 0009). A unit leaving FAILED loses its
-- dep_failed mark: only units still failed because a dependency failed are
-- blocked again when it is retried (deps_unfail).
UPDATE work_unit u SET status = r.status, data = r.data, expires = r.expires,
    worker = r.worker, worker_text = r.worker_text, lease_id = r.lease_id,
    dep_failed = u.dep_failed AND r.status = 5,
    available_since = CASE WHEN r.status = 1 AND u.status <> 1
        THEN GREATEST(r.now, u.not_before) ELSE u.available_since END
FROM unnest($1::bigint[], $2::bytea[], $3::smallint[], $4::bytea[], $5::bigint[], $6::bytea[], $7::boolean[], $8::bigint[], $9::bigint[])
    AS r (spec_id, key, status, data, expires, worker, worker_text, lease_id, now)
WHERE u.spec_id = r.spec_id AND u.key = r.key
