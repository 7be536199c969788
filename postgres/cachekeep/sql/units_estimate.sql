-- units_estimate.sql (analyze.go): the planner estimate of the rows of
-- work_unit.
SELECT reltuples::float8 FROM pg_class WHERE oid = 'work_unit'::regclass
