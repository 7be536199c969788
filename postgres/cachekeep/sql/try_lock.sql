-- try_lock.sql (vacuum.go): the session advisory lock $1 (bigint key
-- space) if it is free.
SELECT pg_try_advisory_lock($1)
