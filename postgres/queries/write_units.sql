-- The general update path's writes: slot i of the arrays is one unit
-- ($1 spec id, $2 key) and its new status, data, expires, worker, worker
-- text flag and lease id ($3-$8), as coordinate.ApplyUpdate computed them.
UPDATE work_unit u SET status = r.status, data = r.data, expires = r.expires,
    worker = r.worker, worker_text = r.worker_text, lease_id = r.lease_id
FROM unnest($1::bigint[], $2::bytea[], $3::smallint[], $4::bytea[], $5::bigint[], $6::bytea[], $7::boolean[], $8::bigint[])
    AS r (spec_id, key, status, data, expires, worker, worker_text, lease_id)
WHERE u.spec_id = r.spec_id AND u.key = r.key
