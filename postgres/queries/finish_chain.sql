-- finish.sql for finishes whose data names units to chain (SEMANTICS
-- §10): finishes the unit and adds the units its data chains to the spec
-- its spec's `then` names, in one statement, so a batch of such finishes
-- commits in one round trip instead of the general path's lock, write
-- and chain round trips. Slot i of the first arrays is one request: $1
-- namespace, $2 spec name, $3 key, $4 new data, $5 the lease id that must
-- still hold (NULL: any), $6 now (ns), $7 the request's index in the
-- batch. Slot j of the others is one unit to chain, computed in Go from
-- the data by coordinate.ChainedInputs and deduplicated as the general
-- path does: $8 the index of its request, $9 key, $10 whether the key is
-- text, $11 data, $12 priority (NULL: the finished unit's), $13 not
-- before (ns, NULL: no delay), $14 group. The units have no
-- dependencies, and no key is named twice in a batch (finish.go).
--
-- A request is applied only when its unit is PENDING with a lease that
-- has not ended (as in finish.sql) and none of its keys exists in the
-- target spec: re-adding an existing unit is the general path's (it
-- keeps a pending unit's lease, a blocked one's edges, unfails).
-- Anything else is left alone and not returned; the committer runs it
-- through the general path (update.go, chains.go), which also gives the
-- errors. A spec without `then`, or whose `then` names no spec, chains
-- nothing and the finish is applied. A key another transaction inserted
-- after this statement's snapshot makes the INSERT fail with a unique
-- violation, which reruns the batch (retryable, convert.go): the rerun
-- sees the key and leaves the request to the general path.
--
-- Answers each applied request's index, spec id, target spec id (NULL:
-- nothing chained) and number of units added. Keeps unit_count (this
-- connection's slot), the workers' outstanding sets and group progress
-- in step (finish_bookkeeping in sql/finish.sql); edges to the finished units are resolved by the next
-- statement, as for finish.sql.
WITH r AS (
    -- Each request with its spec's id (NULL when there is no such spec)
    -- and its target spec's id, each through the (namespace, name) index.
    SELECT r.*,
        (SELECT s.id FROM work_spec s WHERE s.namespace_id = r.ns AND s.name = r.spec) AS spec_id,
        (SELECT t.id FROM work_spec s JOIN work_spec t ON t.namespace_id = s.namespace_id AND t.name = s.then_name
            WHERE s.namespace_id = r.ns AND s.name = r.spec AND s.then_name <> '') AS target
    FROM unnest($1::bigint[], $2::bytea[], $3::bytea[], $4::bytea[], $5::bigint[],
        $6::bigint[], $7::integer[]) AS r (ns, spec, key, data, lease, now, req)
), c AS (
    SELECT * FROM unnest($8::integer[], $9::bytea[], $10::boolean[], $11::bytea[], $12::float8[],
        $13::bigint[], $14::bytea[]) AS c (req, key, key_text, data, prio, nb, grp)
), done AS (
    -- Through the primary key, (spec_id, key), as in finish.sql.
    UPDATE work_unit u SET status = 4, expires = r.now, data = r.data, lease_id = NULL
    FROM r
    WHERE u.spec_id = r.spec_id AND u.key = r.key
        AND u.status::integer = 3 AND u.expires >= r.now
        AND (r.lease IS NULL OR u.lease_id = r.lease)
        AND (r.target IS NULL OR NOT EXISTS (
            SELECT FROM c JOIN work_unit e ON e.spec_id = r.target AND e.key = c.key
            WHERE c.req = r.req))
    RETURNING r.req, u.spec_id, u.key, r.ns AS namespace_id, u.grp, r.now, u.priority, r.target
), chained AS (
    SELECT d.target, d.namespace_id, d.now, c.key, c.key_text, c.data,
        COALESCE(c.prio, d.priority) AS prio, c.nb, c.grp
    FROM done d JOIN c ON c.req = d.req
    WHERE d.target IS NOT NULL
), added AS (
    -- As units_insert_new (sql/add.sql), without ON CONFLICT: see above.
    INSERT INTO work_unit (spec_id, key, key_text, data, status, priority, not_before, grp, available_since)
    SELECT target, key, key_text, data, 1, prio, nb, grp, GREATEST(now, nb)
    FROM chained
    ORDER BY target, key
), moved AS (
    SELECT spec_id, 3 AS status, -1 AS n FROM done
    UNION ALL SELECT spec_id, 4, 1 FROM done
    UNION ALL SELECT target, 1, 1 FROM chained
), touched AS (
    SELECT namespace_id, grp, now FROM done
    UNION ALL SELECT namespace_id, grp, now FROM chained
), {{finish_bookkeeping}}
SELECT d.req, d.spec_id, d.target, (SELECT count(*) FROM c WHERE c.req = d.req AND d.target IS NOT NULL)
FROM done d
