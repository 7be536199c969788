package cborrpc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordinated/coordinated/internal/cborx"
)

// stallingReader serves its bytes, then signals stalled and blocks until
// released: a client that announced more than it sent.
type stallingReader struct {
	data    []byte
	stalled chan<- struct{}
	release <-chan struct{}
	once    sync.Once
}

func (r *stallingReader) Read(p []byte) (int, error) {
	if len(r.data) > 0 {
		n := copy(p, r.data)
		r.data = r.data[n:]
		return n, nil
	}
	r.once.Do(func() { r.stalled <- struct{}{} })
	<-r.release
	return 0, io.EOF
}

// A head announcing a large string costs memory only for the bytes that
// arrived: 100 readers each told of 200 MiB and sent 7 bytes must not
// allocate anything like 100 MiB (each used to reserve 1 MiB at once).
func TestLargeHeadsReserveNothing(t *testing.T) {
	const readers = 100
	head := []byte{0xD8, 0x18, 0x5A, 0x0C, 0x80, 0x00, 0x00} // tag 24, 200 MiB byte string
	bare := append([]byte{0x82, 0x01}, head[2:]...)          // a bare array holding one
	stalled := make(chan struct{}, readers)
	release := make(chan struct{})
	var mem runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&mem)
	before := mem.TotalAlloc
	var wg sync.WaitGroup
	held := make([]int64, readers)
	for i := range readers {
		data := head
		if i%2 == 1 {
			data = bare
		}
		wg.Add(1)
		fr := &frameReader{r: bufio.NewReaderSize(&stallingReader{data: data, stalled: stalled, release: release}, 4096), limit: DefaultMaxRequestSize}
		go func() {
			defer wg.Done()
			if _, err := fr.next(); !errors.Is(err, cborx.ErrTruncated) {
				t.Errorf("reader %d: %v, want truncated", i, err)
			}
			held[i] = fr.mem.held
		}()
	}
	for range readers {
		<-stalled
	}
	runtime.ReadMemStats(&mem)
	allocated := mem.TotalAlloc - before
	close(release)
	wg.Wait()
	// 4 KiB of bufio buffer per reader, a few hundred bytes of request
	// buffer, goroutine bookkeeping: far below 1 MiB a reader.
	if limit := uint64(readers * 32 << 10); allocated > limit {
		t.Errorf("%d stalled readers allocated %d bytes, want at most %d", readers, allocated, limit)
	}
	for i, h := range held {
		if h > minGrow {
			t.Errorf("reader %d held %d bytes for a request of at most 9 bytes received", i, h)
		}
	}
}

// The request buffer follows the bytes received: after 100 KiB of a
// 10 MiB string it holds at most twice that.
func TestRequestBufferFollowsBytes(t *testing.T) {
	const got = 100 << 10
	data := append([]byte{0xD8, 0x18, 0x5A, 0x00, 0xA0, 0x00, 0x00}, make([]byte, got)...)
	stalled := make(chan struct{}, 1)
	release := make(chan struct{})
	fr := &frameReader{r: bufio.NewReader(&stallingReader{data: data, stalled: stalled, release: release}), limit: DefaultMaxRequestSize}
	done := make(chan int64)
	go func() {
		fr.next()
		done <- fr.mem.held
	}()
	<-stalled
	close(release)
	if held := <-done; held < got || held > 2*got {
		t.Errorf("held %d bytes after receiving %d", held, got)
	}
}

// sendPartial writes a tag-24 head announcing size bytes and sends body
// bytes of it, then leaves the request unfinished.
func sendPartial(t *testing.T, ts *testServer, size, body int) net.Conn {
	t.Helper()
	nc, _ := ts.rawConn(t)
	frame := cborx.AppendHead([]byte{0xD8, 0x18}, cborx.MajorBytes, uint64(size))
	if _, err := nc.Write(append(frame, make([]byte, body)...)); err != nil {
		t.Fatal(err)
	}
	return nc
}

// closedByPeer reports a read that ended because the server closed the
// connection (a reset when it closed with our bytes unread).
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// Connections holding unfinished requests cannot take more than the
// daemon-wide budget: the one that would exceed it waits, is closed with a
// log line, and other clients are served throughout.
func TestRequestBudgetBoundsBytesInFlight(t *testing.T) {
	budget := NewRequestBudget(1<<20, 300*time.Millisecond)
	ts := startServer(t, ServerOptions{Budget: budget})
	// Two hogs of 600 KiB each: the first fits, the second cannot.
	first := sendPartial(t, ts, 1<<20, 600<<10)
	waitFor(t, func() bool { return budget.InUse() >= 500<<10 }, "the first request to be charged")
	second := sendPartial(t, ts, 1<<20, 600<<10)

	// An ordinary client is served while the budget is full.
	c := ts.dial(t)
	if res, err := c.Call("echo", 1); err != nil || len(res.(Tuple)) != 1 {
		t.Fatalf("echo while the budget is full: %v, %v", res, err)
	}
	// The second hog is closed once its wait runs out.
	second.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := second.Read(make([]byte, 1)); !closedByPeer(err) {
		t.Fatalf("second hog: read %v, want the connection closed", err)
	}
	if used := budget.InUse(); used > budget.Limit() {
		t.Errorf("budget in use %d exceeds its limit %d", used, budget.Limit())
	}
	waitFor(t, func() bool { return strings.Contains(ts.logs.String(), "request budget exhausted") }, "the log line")
	// Closing the first returns its bytes.
	first.Close()
	waitFor(t, func() bool { return budget.InUse() == 0 }, "the budget to be returned")
	if _, err := c.Call("echo", 2); err != nil {
		t.Fatal(err)
	}
}

// A request larger than the whole budget is refused at once, not after
// waiting.
func TestRequestLargerThanBudgetRefused(t *testing.T) {
	budget := NewRequestBudget(256<<10, time.Hour)
	ts := startServer(t, ServerOptions{Budget: budget})
	nc := sendPartial(t, ts, 1<<20, 400<<10)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); !closedByPeer(err) {
		t.Fatalf("read %v, want the connection closed", err)
	}
	if !strings.Contains(ts.logs.String(), "more bytes than the daemon-wide request budget") {
		t.Errorf("log %q does not say why", ts.logs.String())
	}
}

// Past the connection cap new connections are closed at once, the refusals
// are logged once per interval with a count, and a slot that frees up is
// used again.
func TestConnectionCapRefusesPromptly(t *testing.T) {
	ts := startServer(t, ServerOptions{MaxConnections: 3, RefusalLogInterval: time.Hour})
	clients := make([]*Client, 3)
	for i := range clients {
		clients[i] = ts.dial(t)
		if _, err := clients[i].Call("echo"); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("connection over the cap: read %v, want EOF", err)
		}
		nc.Close()
	}
	if n := strings.Count(ts.logs.String(), "connection limit reached"); n != 1 {
		t.Errorf("%d log lines for 5 refusals in one interval, want 1:\n%s", n, ts.logs.String())
	}
	clients[0].Close()
	waitFor(t, func() bool { return ts.srv.Connections() < 3 }, "the closed connection to be untracked")
	if _, err := ts.dial(t).Call("echo"); err != nil {
		t.Fatalf("after a slot freed up: %v", err)
	}
}

func TestRefusalLogCountsAcrossIntervals(t *testing.T) {
	var buf syncBuffer
	log := newTextLogger(&buf)
	r := refusalLog{interval: 50 * time.Millisecond}
	for range 10 {
		r.refused(log, 7)
	}
	waitFor(t, func() bool { return strings.Count(buf.String(), "connection limit reached") == 2 }, "the delayed line")
	if !strings.Contains(buf.String(), "refused=1 ") || !strings.Contains(buf.String(), "refused=9 ") {
		t.Errorf("log does not carry the counts 1 then 9:\n%s", buf.String())
	}
}

func TestLogValueTruncates(t *testing.T) {
	if got := LogValue("get_work"); got != "get_work" {
		t.Errorf("short value changed: %q", got)
	}
	long := strings.Repeat("é", MaxLogValue) // 2 bytes a rune
	got := LogValue(long)
	if len(got) > MaxLogValue+30 || !strings.HasSuffix(got, "...(400 bytes)") || !strings.HasPrefix(long, strings.TrimSuffix(got, "...(400 bytes)")) {
		t.Errorf("LogValue = %q", got)
	}
	// Bytes that are not UTF-8 are cut at the limit, not dropped.
	if got, want := LogValue(strings.Repeat("\x80", 300)), strings.Repeat("\x80", MaxLogValue)+"...(300 bytes)"; got != want {
		t.Errorf("LogValue(300 continuation bytes) = %q, want %q", got, want)
	}
}

// A client's megabyte method name reaches the log cut short.
func TestHandlerPanicLogTruncatesMethod(t *testing.T) {
	ts := startServer(t, ServerOptions{})
	ts.h.panicOnUnknown = true
	c := ts.dial(t)
	name := strings.Repeat("m", 1<<20)
	if _, err := c.Call(name); err == nil {
		t.Fatal("no error for a panicking handler")
	}
	if logs := ts.logs.String(); len(logs) > 4096 || !strings.Contains(logs, "handler panicked") {
		t.Errorf("log of %d bytes for a 1 MiB method name: %.300q", len(logs), logs)
	}
	if !bytes.Contains([]byte(ts.logs.String()), []byte("(1048576 bytes)")) {
		t.Error("the log does not say how long the name was")
	}
}

// The large-head probe of docs/limits.md over TCP: many connections each send a 7-byte
// head announcing 200 MiB and nothing more. Once every connection's reader
// is waiting for the body, the server must have allocated little more than
// its per-connection buffers (each used to reserve 1 MiB at once).
func TestManyConnectionsWithLargeHeads(t *testing.T) {
	const conns = 300
	ts := startServer(t, ServerOptions{})
	head := []byte{0xD8, 0x18, 0x5A, 0x0C, 0x80, 0x00, 0x00}
	stacks := make([]byte, 16<<20) // allocated before measuring
	var mem runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&mem)
	before := mem.TotalAlloc
	for range conns {
		nc, _ := ts.rawConn(t)
		if _, err := nc.Write(head); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until every connection's reader is blocked on the body: a
	// state of the server, read from its goroutines' stacks.
	waitFor(t, func() bool { return readersWaiting(stacks) >= conns }, "%d readers waiting for a body", conns)
	runtime.ReadMemStats(&mem)
	perConn := (mem.TotalAlloc - before) / conns
	// Two 16 KiB bufio buffers, the connection and goroutine, the test's
	// own client side: well under 128 KiB, against 1 MiB before.
	t.Logf("%d bytes allocated per connection", perConn)
	if perConn > 128<<10 {
		t.Errorf("%d bytes allocated per connection holding a 7-byte head", perConn)
	}
}

// readersWaiting counts goroutines blocked in readN, using buf for their
// stacks.
func readersWaiting(buf []byte) int {
	buf = buf[:runtime.Stack(buf, true)]
	return bytes.Count(buf, []byte("(*frameReader).readN("))
}

// A batch charges batchCallBytes per request to the request budget
// before anything is built for it: a 1 MiB request of a million one-byte
// requests made the server allocate over 500 MiB (a call, an element and
// a reply each) outside the budget. Under a 64 MiB budget it is refused,
// having allocated little, while a small batch is still answered.
func TestBatchChargesTheBudget(t *testing.T) {
	ts := startServer(t, ServerOptions{Budget: NewRequestBudget(64<<20, 100*time.Millisecond)})
	const n = 1 << 20
	inner := cborx.AppendHead(nil, cborx.MajorArray, n)
	inner = append(inner, bytes.Repeat([]byte{0xA0}, n)...)
	frame := appendWrapped(nil, inner)
	nc, fr := ts.rawConn(t)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	if _, err := fr.next(); err == nil {
		t.Fatal("a batch of a million requests was answered under a 64 MiB budget")
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16*uint64(len(frame)) {
		t.Errorf("the refused %d-byte batch allocated %d MiB", len(frame), alloc>>20)
	}
	if logs := ts.logs.String(); !strings.Contains(logs, "request budget exhausted") {
		t.Errorf("log does not say why the connection closed:\n%s", logs)
	}

	c := ts.dial(t)
	if res, err := c.Call("echo", 5); err != nil || res.(Tuple)[0] != uint64(5) {
		t.Fatalf("a request after the refused batch: %v %v", res, err)
	}
	small := cborx.AppendHead(nil, cborx.MajorArray, 3)
	for id := range 3 {
		small, _ = appendRequest(small, uint64(id), "echo", []any{id})
	}
	nc2, fr2 := ts.rawConn(t)
	if _, err := nc2.Write(appendWrapped(nil, small)); err != nil {
		t.Fatal(err)
	}
	got, err := fr2.next()
	if err != nil {
		t.Fatalf("a batch of three: %v", err)
	}
	if h, err := cborx.ReadHead(got); err != nil || h.Major != cborx.MajorArray || h.Arg != 3 {
		t.Fatalf("reply to a batch of three: % X", got)
	}
}
