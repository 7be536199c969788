-- read_ahead_keys.sql (readahead.go): the next $4 available units of
-- spec $1 after position ($2 priority, $3 key) in claim order (priority
-- descending, then key), read from the available-units index alone. Two
-- ranges, each an index range scan: the rest of priority $2, then the
-- lower priorities.
(SELECT priority, key FROM work_unit
 WHERE spec_id = $1 AND status = 1 AND priority = $2 AND key > $3
 ORDER BY key LIMIT $4)
UNION ALL
(SELECT priority, key FROM work_unit
 WHERE spec_id = $1 AND status = 1 AND priority < $2
 ORDER BY priority DESC, key LIMIT $4)
LIMIT $4
