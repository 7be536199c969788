-- The general update path's units, locked: slot i of the arrays is
-- namespace $1, spec name $2, key $3, in (namespace, spec, key) order so
-- concurrent batches lock in the same order (queueLockUnits). Each unit
-- is found through its index by a nested loop; the row comes with the
-- spec facts the transition needs and whether some worker lists it as
-- outstanding. Whether it waits on dependencies is read after the lock,
-- by unit_waits.sql. The columns are scanLockedUnits', in order.
SELECT x.* FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) WITH ORDINALITY AS r (ns, spec, key, i)
CROSS JOIN LATERAL (
    SELECT s.namespace_id, s.id AS spec_id, s.name, s.name_text, s.then_name, s.max_retries,
        u.key, u.data, u.status, u.priority, u.expires, u.worker, u.worker_text, u.lease_id, u.attempts, u.grp,
        EXISTS (SELECT 1 FROM worker_unit w WHERE w.spec_id = u.spec_id AND w.key = u.key)
    FROM work_spec s JOIN work_unit u ON u.spec_id = s.id
    WHERE s.namespace_id = r.ns AND s.name = r.spec AND u.key = r.key
    FOR UPDATE OF u
) x
ORDER BY r.i
