-- Which of the general update path's units (slot i: namespace $1, spec
-- name $2, key $3, as lock_units.sql takes them) wait on dependencies:
-- one row (namespace, spec name, key) per unit with unit_dep edges. A
-- statement of its own, queued right after lock_units.sql: it reads the
-- edges at a snapshot taken after the units were locked. Read in the
-- locking statement, a unit whose lock it waited for (a finish of its
-- last dependency, which locks its dependents: migration 0014) was seen
-- with the edge that finish deleted, and went back to BLOCKED with no
-- edge left (TestConcurrentFinishAndReleaseOfLeasedDependent).
SELECT DISTINCT r.ns, r.spec, r.key
FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) AS r (ns, spec, key)
JOIN work_spec s ON s.namespace_id = r.ns AND s.name = r.spec
JOIN unit_dep e ON e.spec_id = s.id AND e.key = r.key
