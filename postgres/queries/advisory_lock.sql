-- Takes the transaction advisory lock ($1 class, $2 object), held until
-- the transaction ends: a spec's max_running lock (maxrunning.go) or a
-- namespace's lock-service lock (locks.go).
SELECT pg_advisory_xact_lock($1::integer, $2::integer)
