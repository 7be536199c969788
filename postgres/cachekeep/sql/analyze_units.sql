-- analyze_units.sql (analyze.go): planner statistics after bulk loads.
ANALYZE work_unit
