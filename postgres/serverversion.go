package postgres

import (
	"fmt"
	"strconv"
)

// minServerMajor is the oldest PostgreSQL major version the schema and the
// queries run on: the scheduler's read (queries/candidates.sql) takes its
// horizon from pg_current_snapshot, which PostgreSQL 13 introduced.
const minServerMajor = 13

// checkServerVersion says whether a server reporting version (its
// server_version parameter: "15.4 (Debian 15.4-1.pgdg120+1)", "13.0",
// "17beta1", "9.6.24") is recent enough, with an error a user can act on
// when it is not.
func checkServerVersion(version string) error {
	i := 0
	for i < len(version) && version[i] >= '0' && version[i] <= '9' {
		i++
	}
	major, err := strconv.Atoi(version[:i])
	if err != nil {
		return fmt.Errorf("postgres: cannot read the server's version %q", version)
	}
	if major < minServerMajor {
		return fmt.Errorf("postgres: the server is PostgreSQL %s; coordinated needs PostgreSQL %d or later", version, minServerMajor)
	}
	return nil
}
