package cachekeep

import (
	"context"
	_ "embed"

	"github.com/jackc/pgx/v5/pgconn"
)

//go:embed sql/unlock.sql
var unlockSQL string

// Execer runs a statement: a *pgx.Conn, or a connection of a pool.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Unlock releases the session advisory lock key held on conn: the VACUUM
// lock here and the backend's migration lock (postgres/migrate.go), so
// the statement is written once, in the lower of the two packages.
func Unlock(ctx context.Context, conn Execer, key int64) error {
	_, err := conn.Exec(ctx, unlockSQL, key)
	return err
}
