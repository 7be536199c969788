package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/postgres/cachekeep"
)

// The statements, from sql/maintenance.sql.
var (
	sessionLockSQL       = namedSQL("session_lock")
	migrationsTableSQL   = namedSQL("migrations_table")
	migrationsAppliedSQL = namedSQL("migrations_applied")
	migrationAppliedSQL  = namedSQL("migration_applied")
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockKey is the pg_advisory_lock key held while migrating, so
// daemons starting together apply each migration once.
const migrationLockKey = 0x636f6f7264 // "coord" (cachekeep/vacuum.go's is "coorv")

// migration is one numbered schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations lists the embedded migrations in version order. File names are
// NNNN_description.sql.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("postgres migration %q: name must start with a number and '_'", e.Name())
		}
		body, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// Migrate brings the database at url up to the current schema and returns.
// It is safe to run from several processes at once.
func Migrate(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("postgres migrate: connect: %w", err)
	}
	defer conn.Close(context.Background())
	return migrateConn(ctx, conn)
}

func migrateConn(ctx context.Context, conn *pgx.Conn) error {
	return migrateConnTo(ctx, conn, math.MaxInt)
}

// migrateConnTo applies the migrations up to version upTo (tests start
// from an earlier schema with it).
func migrateConnTo(ctx context.Context, conn *pgx.Conn, upTo int) error {
	if err := checkServerVersion(conn.PgConn().ParameterStatus("server_version")); err != nil {
		return err
	}
	all, err := migrations()
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, sessionLockSQL, int64(migrationLockKey)); err != nil {
		return fmt.Errorf("postgres migrate: lock: %w", err)
	}
	defer cachekeep.Unlock(context.Background(), conn, migrationLockKey) //nolint:errcheck

	if _, err := conn.Exec(ctx, migrationsTableSQL); err != nil {
		return fmt.Errorf("postgres migrate: schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	rows, err := conn.Query(ctx, migrationsAppliedSQL)
	if err != nil {
		return fmt.Errorf("postgres migrate: read versions: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return fmt.Errorf("postgres migrate: read versions: %w", err)
	}
	for _, v := range versions {
		applied[int(v)] = true
	}
	for _, m := range all {
		if applied[m.version] || m.version > upTo {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, migrationAppliedSQL, m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres migration %s: %w", m.name, err)
		}
	}
	return nil
}
