-- The common update_work_unit in one statement, without reading the units
-- first: finish units that are PENDING with a lease that has not ended.
-- Slot i of the arrays is one request: $1 namespace, $2 spec name, $3 key,
-- $4 new data (NULL keeps the unit's), $5 whether that data chains no
-- units (else the spec must have no `then`), $6 the lease id that must
-- still hold (NULL: any), $7 now (ns), $8 the request's index in the
-- batch. A request whose unit does not match is left alone and not
-- returned; the committer runs it through the general path (update.go),
-- which also gives the errors. The transition is coordinate.ApplyUpdate's
-- PENDING + FINISHED: completion time in expires, worker kept, lease gone.
-- Answers each applied request's index and spec id. Keeps unit_count
-- (this connection's slot), the workers' outstanding
-- sets and group progress in step (finish_bookkeeping in sql/finish.sql,
-- shared with finish_chain.sql). Edges to the finished units are
-- resolved by the next statement, which sees edges committed while this
-- one waited for a row.
WITH r AS (
    -- Each request with its spec's id (NULL when there is no such spec).
    SELECT r.*, (SELECT s.id FROM work_spec s WHERE s.namespace_id = r.ns AND s.name = r.spec) AS spec_id
    FROM unnest($1::bigint[], $2::bytea[], $3::bytea[], $4::bytea[], $5::boolean[],
        $6::bigint[], $7::bigint[], $8::integer[])
        AS r (ns, spec, key, data, nochain, lease, now, req)
), done AS (
    -- The rows are found through the primary key, (spec_id, key). The
    -- conditions are checked again on the row as the UPDATE finds it (a
    -- concurrent change makes the request fall through). status is cast
    -- so no partial index on status looks like a way in.
    UPDATE work_unit u SET status = 4, expires = r.now, data = COALESCE(r.data, u.data), lease_id = NULL
    FROM r
    WHERE u.spec_id = r.spec_id AND u.key = r.key
        AND u.status::integer = 3 AND u.expires >= r.now
        AND (r.lease IS NULL OR u.lease_id = r.lease)
        AND (r.nochain OR (SELECT s.then_name FROM work_spec s WHERE s.id = u.spec_id) = '')
    RETURNING r.req, u.spec_id, u.key, r.ns AS namespace_id, u.grp, r.now
), moved AS (
    SELECT spec_id, 3 AS status, -1 AS n FROM done
    UNION ALL SELECT spec_id, 4, 1 FROM done
), touched AS (
    SELECT namespace_id, grp, now FROM done
), {{finish_bookkeeping}}
SELECT req, spec_id FROM done
