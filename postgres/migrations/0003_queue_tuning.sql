-- Storage settings for queue-shaped tables (issue 4 performance).
--
-- unit_count is a few rows updated on every get_work and update: leave
-- room on each page for HOT updates and vacuum it often so its dead row
-- versions do not pile up in front of readers.
ALTER TABLE unit_count SET (fillfactor = 50, autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 2000);
-- work_unit rows change status all the time; vacuum sooner than the
-- default 20% of the table so the partial index get_work reads stays free
-- of dead entries.
ALTER TABLE work_unit SET (autovacuum_vacuum_scale_factor = 0.05,
    autovacuum_vacuum_insert_scale_factor = 0.05);
