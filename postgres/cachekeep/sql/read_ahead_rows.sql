-- read_ahead_rows.sql (readahead.go): read the rows of spec $1's units
-- with keys $2 and discard them. Run with index and sequential scans
-- turned off, so it is a bitmap heap scan, which with
-- effective_io_concurrency asks the kernel for many of the rows' pages at
-- once instead of one after another.
SELECT count(data) FROM work_unit WHERE spec_id = $1 AND key = ANY($2::bytea[])
