package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/coordinate/coordinatetest"
	"github.com/coordinated/coordinated/internal/pgtest"
	"github.com/coordinated/coordinated/postgres"
)

// The Python daemon's files written by pyimport/testdata/gen.py: snapshot
// A, the action log after it, and snapshot B written after that log.
const (
	pyData    = "../../pyimport/testdata/"
	pySnapA   = pyData + "snapshot_20250101_000001.000"
	pyLogAB   = pyData + "log_20250101_000002.000"
	pySnapB   = pyData + "snapshot_20250101_000003.000"
	pyLogName = "log_20250101_000002.000"
)

// pyDir makes a Python snapshot directory holding snapshot A and B (with
// their .md5 files, B newer) and the log between them.
func pyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	for i, f := range []string{pySnapA, pySnapA + ".md5", pyLogAB, pySnapB, pySnapB + ".md5"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(dst, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// counts returns count_work_units of each spec named, as text, with
// AVAILABLE and PENDING counted together as "open": the leases in the
// files lapse a while after gen.py wrote them, so which of the two a unit
// is depends on the day the test runs (pyimport's tests pin them).
func counts(t *testing.T, addr string, specs ...string) string {
	t.Helper()
	c, err := cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []string
	for _, s := range specs {
		res, err := c.Call("count_work_units", []byte(s))
		if err != nil {
			t.Fatalf("count_work_units %s: %v", s, err)
		}
		var m map[any]any
		switch pair := res.(type) {
		case []any:
			m, _ = pair[0].(map[any]any)
		case cborrpc.Tuple:
			m, _ = pair[0].(map[any]any)
		}
		if m == nil {
			out = append(out, fmt.Sprintf("%s=%v", s, res))
			continue
		}
		byStatus := map[string]uint64{}
		for k, v := range m {
			name := map[string]string{"1": "open", "3": "open", "4": "finished", "5": "failed"}[fmt.Sprint(k)]
			n, _ := v.(uint64)
			byStatus[name] += n
		}
		out = append(out, fmt.Sprintf("%s=%v", s, byStatus))
	}
	return strings.Join(out, " ")
}

// wantAfterLog are the counts of state B (A plus the log).
const wantAfterLog = "flow=map[failed:2 finished:2 open:2] late=map[open:2] sink=map[open:1] paused=map[open:2]"

// TestTakeOverSnapshotDir: started as the Python daemon's unit file starts
// it, the daemon imports the newest complete snapshot (B's .md5 is bad
// here, so A) and the log after it into DIR/coordinated, once.
func TestTakeOverSnapshotDir(t *testing.T) {
	dir := pyDir(t)
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(pySnapB)+".md5"), []byte("00000000000000000000000000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, "coordinate:\n  job_queue:\n    log_path_format: "+filepath.Join(dir, "log_{timestamp}")+"\n")
	args := []string{"-c", cfg, "--host", "127.0.0.1", "--port", "0", "--snapshot-dir", dir}
	addr, logs, stop := startExact(t, args...)
	if got := counts(t, addr, "flow", "late", "sink", "paused"); got != wantAfterLog {
		t.Errorf("after take-over: %s\nwant %s\n%s", got, wantAfterLog, logs)
	}
	for _, want := range []string{"skipping a Python snapshot", "MD5 mismatch", "imported the Python daemon's state", "specs=6", pyLogName} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	c, err := cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call("del_work_spec", []byte("late")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if segs, _ := filepath.Glob(filepath.Join(dir, "coordinated", "journal-*.log")); len(segs) == 0 {
		t.Errorf("our state is not in DIR/coordinated: no journal segment there")
	}

	// Restarted: our own state, not the Python snapshot again.
	addr, logs, stop = startExact(t, args...)
	if got := counts(t, addr, "late"); !strings.Contains(got, "no such work_spec") && !strings.Contains(got, "false") {
		t.Errorf("the deleted spec came back after a restart: %s\n%s", got, logs)
	}
	if !strings.Contains(logs.String(), "not imported again") {
		t.Errorf("restart log lacks the not-imported-again line:\n%s", logs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestTakeOverEmptyAndGzip(t *testing.T) {
	empty := t.TempDir()
	_, logs, stop := startExact(t, "-listen", "127.0.0.1:0", "--snapshot-dir", empty)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "no Python snapshot to import; starting with an empty queue") {
		t.Errorf("empty directory: log lacks the nothing-found line:\n%s", logs)
	}

	gz := t.TempDir()
	for _, f := range []string{"snapshot_20250101_000001.000.gz", "snapshot_20250101_000001.000.gz.md5"} {
		data, err := os.ReadFile(pyData + "gz/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(gz, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr, logs, stop := startExact(t, "-listen", "127.0.0.1:0", "--snapshot-dir", gz, "-backend", "memory:")
	if got := counts(t, addr, "flow", "paused"); got != "flow=map[failed:1 finished:1 open:5] paused=map[open:2]" {
		t.Errorf("from the .gz snapshot: %s\n%s", got, logs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestTakeOverBadSnapshot: a complete (MD5-matching) snapshot that cannot
// be read stops the start, naming the file and offset, and leaves no data
// directory behind.
func TestTakeOverBadSnapshot(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(pySnapA)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "snapshot_20250101_000001.000")
	data = data[:len(data)-7]
	sum := md5.Sum(data)
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad+".md5", []byte(hex.EncodeToString(sum[:])+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	err = run(context.Background(), []string{"-listen", "127.0.0.1:0", "--snapshot-dir", dir}, io.Discard, &stderr, nil)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "at byte ") || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("run = %v, want an error naming %s and the offset", err, bad)
	}
	for _, d := range []string{"coordinated", "coordinated.importing"} {
		if _, err := os.Stat(filepath.Join(dir, d)); !os.IsNotExist(err) {
			t.Errorf("%s left behind after a failed import (%v)", d, err)
		}
	}
}

func TestImportPythonCommand(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		dir := t.TempDir()
		testImportPython(t, []string{"-data-dir", dir}, func(t *testing.T) string {
			addr, _, stop := startExact(t, "-listen", "127.0.0.1:0", "-data-dir", dir)
			defer stop()
			return counts(t, addr, "flow", "late", "sink", "paused")
		})
	})
	t.Run("postgres", func(t *testing.T) {
		dbURL, _ := pgtest.FreshSchema(t, "import_python")
		testImportPython(t, []string{"-backend", dbURL}, func(t *testing.T) string {
			addr, _, stop := startExact(t, "-listen", "127.0.0.1:0", "-backend", dbURL)
			defer stop()
			return counts(t, addr, "flow", "late", "sink", "paused")
		})
	})
}

// testImportPython runs import-python with the backend flags given and
// checks what a daemon on that backend then serves.
func testImportPython(t *testing.T, backend []string, serve func(*testing.T) string) {
	importPy := func(args ...string) (string, error) {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append(append([]string{"import-python"}, backend...), args...), &stdout, &stderr, nil)
		return stdout.String() + stderr.String(), err
	}
	// Bad input first: nothing is stored.
	dir := t.TempDir()
	unknown := filepath.Join(dir, "log_bad")
	logData, err := os.ReadFile(pyLogAB)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unknown, append(logData, 0x82, 0x43, 'z', 'a', 'p', 0x80), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := importPy(pySnapA, unknown); err == nil || !strings.Contains(err.Error(), `unknown action "zap"`) ||
		!strings.Contains(err.Error(), fmt.Sprintf("at byte %d", len(logData))) {
		t.Fatalf("import with a bad log: %v\n%s", err, out)
	}

	out, err := importPy(pySnapA, pyLogAB)
	if err != nil {
		t.Fatalf("import-python: %v\n%s", err, out)
	}
	for _, want := range []string{"work spec", "available", "flow", "total (6 specs)"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if out, err := importPy(pySnapB); err == nil || !strings.Contains(err.Error(), "-replace") || !strings.Contains(err.Error(), `"flow"`) {
		t.Errorf("second import: %v, want a refusal naming the specs and -replace\n%s", err, out)
	}
	if out, err := importPy("-replace", pySnapB); err != nil {
		t.Fatalf("import-python -replace: %v\n%s", err, out)
	}
	if got := serve(t); got != wantAfterLog {
		t.Errorf("daemon serves %s\nwant %s", got, wantAfterLog)
	}
}

// TestTakeOverPostgresOnce: on PostgreSQL the snapshots are imported into
// a database without work specs, and not again once it has some.
func TestTakeOverPostgresOnce(t *testing.T) {
	dbURL, _ := pgtest.FreshSchema(t, "takeover")
	dir := pyDir(t)
	args := []string{"-listen", "127.0.0.1:0", "-backend", dbURL, "--snapshot-dir", dir}
	addr, logs, stop := startExact(t, args...)
	if got := counts(t, addr, "flow", "late", "sink", "paused"); got != wantAfterLog {
		t.Errorf("after take-over: %s\nwant %s\n%s", got, wantAfterLog, logs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "coordinated")); !os.IsNotExist(err) {
		t.Errorf("a data directory was made for the postgres backend (%v)", err)
	}
	_, logs, stop = startExact(t, args...)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "already holds work specs") || strings.Contains(logs.String(), "imported the Python") {
		t.Errorf("second start imported again:\n%s", logs)
	}
}

// TestImportPythonChecksMD5: a snapshot named by hand is checked against
// its .md5 file when it has one.
func TestImportPythonChecksMD5(t *testing.T) {
	dir := pyDir(t)
	snap := filepath.Join(dir, filepath.Base(pySnapA))
	if err := os.WriteFile(snap+".md5", []byte("ffffffffffffffffffffffffffffffff\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	err := run(context.Background(), []string{"import-python", "-data-dir", data, snap}, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "MD5 mismatch") || !strings.Contains(err.Error(), snap) {
		t.Errorf("import-python with a bad .md5: %v", err)
	}
	if fresh, _ := dirIsNew(data); !fresh {
		t.Error("the refused import wrote to the data directory")
	}
}

// TestTakeOverPortTaken: while the port is still held (the Python daemon
// not stopped yet) the start fails before anything is imported, so the
// next start, once the port is free, takes over the Python daemon's
// snapshots as they are then.
func TestTakeOverPortTaken(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	dir := pyDir(t)
	var stderr bytes.Buffer
	err = run(context.Background(), []string{"-listen", held.Addr().String(), "--snapshot-dir", dir}, io.Discard, &stderr, nil)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("run on a taken port = %v, want address already in use\n%s", err, stderr.String())
	}
	for _, d := range []string{"coordinated", "coordinated.importing"} {
		if _, err := os.Stat(filepath.Join(dir, d)); !os.IsNotExist(err) {
			t.Errorf("%s made by a start that could not listen (%v):\n%s", d, err, stderr.String())
		}
	}
}

// TestImportPythonReplaceFailsWhole: import-python -replace on PostgreSQL
// that fails in the database after deleting the specs it replaces (here a
// trigger refusing every new unit) leaves those specs and their units as
// they were. It used to delete them first, each in its own transaction.
func TestImportPythonReplaceFailsWhole(t *testing.T) {
	ctx := t.Context()
	dbURL, _ := pgtest.FreshSchema(t, "import_replace")
	importPy := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"import-python", "-backend", dbURL}, args...), &out, &out, nil)
		return out.String(), err
	}
	if out, err := importPy(pySnapA); err != nil {
		t.Fatalf("import-python: %v\n%s", err, out)
	}
	b, err := postgres.New(ctx, dbURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ns, err := b.Namespace(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	state := func() string { return coordinatetest.Render(t, ns) }
	if err := ns.UpdateWorkUnit(ctx, "flow", "f1", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		t.Fatal(err)
	}
	before := state()
	if !strings.Contains(before, `"flow"`) {
		t.Fatalf("after the import:\n%s", before)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE FUNCTION refuse_unit() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN RAISE EXCEPTION 'test refuses every unit'; END $$;
		CREATE TRIGGER refuse_unit BEFORE INSERT ON work_unit FOR EACH ROW EXECUTE FUNCTION refuse_unit()`); err != nil {
		t.Fatal(err)
	}
	if out, err := importPy("-replace", pySnapB); err == nil || !strings.Contains(err.Error(), "test refuses every unit") {
		t.Fatalf("import-python -replace refused by the database: %v, want the trigger's error\n%s", err, out)
	}
	if after := state(); after != before {
		t.Errorf("a failed import-python -replace changed the backend:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestTakeOverSyncsRename: the take-over syncs the directory holding the
// data directory once the staging directory is renamed into place (else a
// power cut could undo the rename after the daemon ran, and the next start
// import again), and a failed sync stops the start with its error.
func TestTakeOverSyncsRename(t *testing.T) {
	dir := pyDir(t)
	var synced []string
	syncDir := func(d string) error {
		_, errData := os.Stat(filepath.Join(dir, "coordinated"))
		_, errStaging := os.Stat(filepath.Join(dir, "coordinated.importing"))
		if errData != nil || !os.IsNotExist(errStaging) {
			t.Errorf("directory %s synced before the rename (data directory: %v, staging: %v)", d, errData, errStaging)
		}
		synced = append(synced, d)
		return errors.New("test: fsync failed")
	}
	opts, err := parseOptions([]string{"-listen", "127.0.0.1:0", "--snapshot-dir", dir}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	opts.syncDir = syncDir
	b, err := openBackendTakingOver(context.Background(), opts, coordinate.SystemClock{}, slog.New(slog.DiscardHandler))
	if err == nil {
		b.Close()
		t.Fatalf("the backend opened after the directory fsync failed (synced %q)", synced)
	}
	if !strings.Contains(err.Error(), "test: fsync failed") || !strings.Contains(err.Error(), "durable") {
		t.Fatalf("opening with a failing directory fsync = %v, want that error", err)
	}
	if len(synced) != 1 || filepath.Clean(synced[0]) != filepath.Clean(dir) {
		t.Errorf("synced %q, want the directory holding the data directory, %s", synced, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "coordinated.importing")); !os.IsNotExist(err) {
		t.Errorf("staging directory left behind (%v)", err)
	}
}

// A -data-dir given with a trailing slash is built aside, not inside
// itself, and renamed into place.
func TestTakeOverDataDirWithSlash(t *testing.T) {
	dir := pyDir(t)
	data := filepath.Join(t.TempDir(), "data")
	opts, err := parseOptions([]string{"-listen", "127.0.0.1:0", "--snapshot-dir", dir, "-data-dir", data + "/"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b, err := openBackendTakingOver(context.Background(), opts, coordinate.SystemClock{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("take-over into %s/: %v", data, err)
	}
	b.Close()
	if segs, _ := filepath.Glob(filepath.Join(data, "journal-*.log")); len(segs) == 0 {
		t.Errorf("no journal segment in %s", data)
	}
	if _, err := os.Stat(filepath.Join(data, ".importing")); !os.IsNotExist(err) {
		t.Errorf("a staging directory inside the data directory (%v)", err)
	}
}
