package postgres

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/coordinated/coordinated/coordinate"
)

// Times are stored as bigint nanoseconds since the Unix epoch; the zero
// time is NULL.

func nsOf(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := t.UnixNano()
	return &v
}

func timeOf(ns *int64) time.Time {
	if ns == nil {
		return time.Time{}
	}
	return time.Unix(0, *ns).UTC()
}

// nameOf rebuilds a Name from its bytea and text-flag columns; nil when the
// bytes are NULL.
func nameOf(b []byte, text *bool) *coordinate.Name {
	if b == nil {
		return nil
	}
	n := coordinate.Name{Bytes: string(b), Text: text != nil && *text}
	return &n
}

// nameCols splits an optional Name into its bytea and text-flag columns.
func nameCols(n *coordinate.Name) ([]byte, *bool) {
	if n == nil {
		return nil, nil
	}
	t := n.Text
	return []byte(n.Bytes), &t
}

// bytesOf returns s as a non-nil []byte: pgx must send a bytea, never text.
func bytesOf(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return []byte(s)
}

// retryable reports whether a transaction failed only because of
// concurrency and may simply be rerun: a deadlock, a serialization
// failure, a unique violation (another daemon inserted the same unit
// between our read and our insert; the rerun sees it), or a foreign key
// violation (a row read, such as the worker record a claim lists its
// units under, was deleted before our insert referring to it; the rerun
// does not see it).
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "40P01" || pgErr.Code == "40001" || pgErr.Code == "23505" || pgErr.Code == "23503"
	}
	return false
}
