-- vacuum_units.sql (vacuum.go): VACUUM behind claims.
VACUUM work_unit
