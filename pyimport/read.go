package pyimport

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Source names the files to import: a snapshot ("" for none: start from an
// empty queue) and the action logs to replay after it, in order.
type Source struct {
	Snapshot string
	Logs     []string
}

// ReadReport says what Read read.
type ReadReport struct {
	Records int // log records replayed
	// Torn lists the logs that ended inside a record (see ReadLog), in
	// replay order; the partial record was not applied.
	Torn []TornLog
}

// TornLog is a log that ends inside a record: File, and the Offset of
// that record.
type TornLog struct {
	File   string
	Offset int64
}

// Read parses the snapshot and the logs and replays the logs over it at
// time now. All files are read before anything is replayed, so bad input
// fails with a *FormatError naming the file and offset. A log may end
// inside a record: a Python daemon that was stopped leaves the log it had
// open so, its last buffered writes never flushed, and one restarted
// without a snapshot in between leaves such a log before the next run's.
// The complete records are replayed and the cut ones reported.
func Read(src Source, now time.Time) (*State, *ReadReport, error) {
	st := &State{Specs: make(map[string]*Spec)}
	if src.Snapshot != "" {
		r, err := openFile(src.Snapshot)
		if err != nil {
			return nil, nil, err
		}
		st, err = ReadSnapshot(src.Snapshot, r)
		r.Close()
		if err != nil {
			return nil, nil, err
		}
	}
	rep := &ReadReport{}
	var actions []Action
	for _, path := range src.Logs {
		res, err := readLogFile(path)
		if err != nil {
			return nil, nil, err
		}
		if res.Truncated {
			rep.Torn = append(rep.Torn, TornLog{File: path, Offset: res.TruncatedAt})
		}
		actions = append(actions, res.Actions...)
	}
	if err := Replay(st, actions, now); err != nil {
		return nil, nil, err
	}
	rep.Records = len(actions)
	return st, rep, nil
}

func readLogFile(path string) (*LogResult, error) {
	r, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return ReadLog(path, r)
}

// CheckSidecar verifies a snapshot named by hand against its .md5 file
// when it has one.
func CheckSidecar(path string) error {
	if _, err := os.Stat(path + ".md5"); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := CheckMD5(path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
