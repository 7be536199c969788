-- The expiry (ns) of the last lease of a worker on an outstanding unit
-- that lapsed: get_child_work_units reports it as the unit's expires while
-- nobody holds the unit, as the Python daemon reported the past lease time
-- until its lazy sweep ran (docs/compat.md). Set where leases lapse: the
-- sweep (queries/sweep.sql) and expireInGo (update.go, through
-- worker_unit_lapse in sql/workers.sql); NULL while none lapsed. The
-- memory backend keeps the same (workerRegistry.lapse).
ALTER TABLE worker_unit ADD COLUMN lapsed bigint;
