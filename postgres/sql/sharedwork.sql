-- Long-poll wake-ups across daemons (sharedwork.go): LISTEN/NOTIFY on two
-- channels, payloads "<namespace id> <daemon instance> <ms or -> <schema>".

-- name: sharedwork_listen
LISTEN coordinated_waiting; LISTEN coordinated_work

-- Sends payload $2 on channel $1.
-- name: sharedwork_notify
SELECT pg_notify($1, $2)
