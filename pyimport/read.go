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
	// TornTail is set when the last log ended inside a record (see
	// ReadLog); the partial record was not applied. TornAt is its offset.
	TornTail bool
	TornAt   int64
}

// Read parses the snapshot and the logs and replays the logs over it at
// time now. All files are read before anything is replayed, so bad input
// fails with a *FormatError naming the file and offset. Only the last log
// may end inside a record (a Python daemon that was stopped leaves its
// newest log so, its last writes never flushed); any other truncation is
// an error.
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
	for i, path := range src.Logs {
		res, err := readLogFile(path)
		if err != nil {
			return nil, nil, err
		}
		if res.Truncated {
			if i != len(src.Logs)-1 {
				return nil, nil, &FormatError{File: path, Offset: res.TruncatedAt,
					Msg: "the file ends inside a record (truncated), and it is not the newest log"}
			}
			rep.TornTail, rep.TornAt = true, res.TruncatedAt
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
