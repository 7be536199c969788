-- Removes the edges to the units $1-$3 (namespace, spec, key) that are
-- FINISHED and makes the blocked dependents left without edges available
-- (resolve_finished_units, migrations 0004 to 0014); $4 is now. Units
-- given that are not FINISHED keep their edges, so the fast finish path
-- can queue it for every unit it tried. It must run as a statement of its
-- own after the units were locked or written: its snapshot then holds
-- every edge added before. Most finished units have no dependents; then
-- it is one index probe per unit, and the function, whose statement costs
-- far more to start than to run on no rows, is not called.
SELECT resolve_finished_units($1, $2, $3, $4)
WHERE EXISTS (
    SELECT 1 FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) AS r (ns, spec, key)
    JOIN unit_dep e ON e.namespace_id = r.ns AND e.dep_spec = r.spec AND e.dep_key = r.key)
