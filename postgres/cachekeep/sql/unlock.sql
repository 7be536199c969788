-- unlock.sql (lock.go): release the session advisory lock $1.
SELECT pg_advisory_unlock($1)
