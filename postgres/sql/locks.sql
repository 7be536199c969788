-- The lock service (locks.go, table lock_path of migration 0007).

-- The locks of namespace $1 whose deadline is before $2 (ns).
-- name: locks_expire
DELETE FROM lock_path WHERE namespace_id = $1 AND deadline < $2

-- Locks path $2 (prefix keys $3, extension bound $4 or NULL for none) of
-- namespace $1 for owner ($5, $6) until $7 unless it, a prefix or an
-- extension is locked.
-- name: lock_if_free
INSERT INTO lock_path (namespace_id, key, owner, owner_text, deadline)
    SELECT $1, $2, $5, $6, $7
    WHERE NOT EXISTS (SELECT 1 FROM lock_path WHERE namespace_id = $1 AND key = ANY ($3::bytea[]))
        AND NOT EXISTS (SELECT 1 FROM lock_path WHERE namespace_id = $1 AND key > $2 AND ($4::bytea IS NULL OR key < $4))

-- The holders (or NULLs) of the paths $2 of namespace $1, in order.
-- name: locks_read
SELECT l.owner, l.owner_text FROM unnest($2::bytea[]) WITH ORDINALITY AS r (key, i)
    LEFT JOIN lock_path l ON l.namespace_id = $1 AND l.key = r.key ORDER BY r.i

-- name: locks_renew
UPDATE lock_path SET deadline = $3 WHERE namespace_id = $1 AND key = ANY ($2::bytea[])

-- name: locks_unlock
DELETE FROM lock_path WHERE namespace_id = $1 AND key = ANY ($2::bytea[])

-- The locks of namespace $1 on path $2 and its extensions (below bound $3,
-- NULL for none).
-- name: locks_drop_under
DELETE FROM lock_path WHERE namespace_id = $1 AND key >= $2 AND ($3::bytea IS NULL OR key < $3)
