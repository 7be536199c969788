-- Records progress of groups: slot i of the arrays is namespace $1, group
-- name $2, time $3 (ns); a group's last progress only moves forward.
INSERT INTO unit_group (namespace_id, name, last_progress)
SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bigint[])
ON CONFLICT (namespace_id, name) DO UPDATE
SET last_progress = GREATEST(unit_group.last_progress, EXCLUDED.last_progress)
