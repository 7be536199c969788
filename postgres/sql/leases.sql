-- Lease expiry (sweep.go; the common case is queries/sweep.sql).

-- The units whose lease ended before $1 (ns) and whose spec max_retries is
-- used up (coordinate.RetriesExhausted in SQL), locked, skipping rows
-- others hold.
-- name: leases_exhausted
SELECT u.spec_id, s.namespace_id, s.name, u.key, u.data, u.attempts, s.max_retries, u.grp FROM work_unit u JOIN work_spec s ON s.id = u.spec_id
    WHERE u.status = 3 AND u.expires < $1 AND s.max_retries > 0 AND u.attempts > s.max_retries
    ORDER BY u.spec_id, u.key
    FOR UPDATE OF u SKIP LOCKED
