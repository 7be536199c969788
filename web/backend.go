package web

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coordinated/coordinated/internal/histo"
	"github.com/coordinated/coordinated/journal"
)

// Optional backend interfaces, found by type assertion on the Backend
// given in Options. Each backend implements those that apply to it.
type (
	// journaled is a persistent memory backend.
	journaled interface {
		JournalStats() journal.Stats
		SnapshotSeconds() *histo.Histogram
	}
	// pooled is the PostgreSQL backend.
	pooled interface {
		PoolStats() *pgxpool.Stat
		CommitBatchSizes() *histo.Histogram
	}
)
