package main

import (
	"log/slog"
	"runtime"

	"github.com/coordinated/coordinated/journal"
)

// Under -sync group the journal's flusher spends most of its time in the
// system call that makes a group durable (an O_DSYNC write, ≈ 0.15 ms on
// the disk measured), and a goroutine in a system call keeps its
// processor (P) until the runtime's monitor takes it back, which takes
// from 20 µs to several milliseconds. With one P per CPU that leaves the
// connection handlers one P fewer than there are CPUs for most of the
// time: in execution traces of a drain at 8 connections on 2 CPUs, work
// waited for a processor while the flusher's sync held the other one for
// 31% of the time (docs/persistence.md, "Group commit, third pass"). The
// daemon therefore runs one P more than the runtime's default, so the
// sync's P is an extra one. GOMAXPROCS in the environment wins.

// extraSyncProcessor reports whether the daemon adds a processor for the
// journal's group syncs: a durable memory backend under -sync group.
func extraSyncProcessor(s *storage) bool {
	return !isPostgresURL(s.backend) && !s.volatile && s.sync == journal.SyncGroup
}

// setProcessors sets GOMAXPROCS to the runtime's default, plus one if
// extraSyncProcessor says so, unless the environment sets GOMAXPROCS. It
// starts from the default each time, so calling it again (tests run the
// daemon in-process) does not add up. Once one is added the runtime no
// longer follows changes of the CPU limit while the daemon runs.
func setProcessors(s *storage, getenv func(string) string, log *slog.Logger) {
	if getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.SetDefaultGOMAXPROCS()
	if !extraSyncProcessor(s) {
		return
	}
	n := runtime.GOMAXPROCS(0) + 1
	runtime.GOMAXPROCS(n)
	log.Debug("one processor more for the journal's group syncs", "gomaxprocs", n)
}
