-- Drops the units ($1 spec ids, $2 keys) from every worker's outstanding
-- set.
DELETE FROM worker_unit w USING unnest($1::bigint[], $2::bytea[]) AS r (spec_id, key)
WHERE w.spec_id = r.spec_id AND w.key = r.key
