package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordinated/coordinated/cborrpc"
)

// The probes of docs/limits.md ("Measured"): figures from a real daemon
// process, reported as benchmark metrics, never pass/fail timings. Run
// them with `make probes`; each iteration starts a fresh daemon.

// daemonProcess is this test binary running main (see TestMain) as a
// separate process, so its RSS is the daemon's alone.
type daemonProcess struct {
	cmd  *exec.Cmd
	addr string
}

// startDaemonProcess starts the daemon with args (space-separated, no
// quoting) and waits for its listening address. It is killed at the end
// of the test unless stopped before.
func startDaemonProcess(tb testing.TB, args string) *daemonProcess {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), "COORDINATED_TEST_DAEMON=1", "COORDINATED_TEST_ARGS="+args)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addrRE := regexp.MustCompile(`listening addr=(\S+)`)
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if m := addrRE.FindStringSubmatch(lines.Text()); m != nil {
			go io.Copy(io.Discard, stderr)
			return &daemonProcess{cmd: cmd, addr: m[1]}
		}
	}
	tb.Fatal("the daemon never logged its listening address")
	return nil
}

// rss reads the daemon's resident set and its peak so far, in bytes, from
// /proc.
func (d *daemonProcess) rss(tb testing.TB) (now, peak int64) {
	tb.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		tb.Fatal(err)
	}
	field := func(name string) int64 {
		for _, line := range strings.Split(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, name+":"); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err != nil {
					tb.Fatalf("/proc status %s: %v", name, err)
				}
				return kb << 10
			}
		}
		tb.Fatalf("/proc status has no %s", name)
		return 0
	}
	return field("VmRSS"), field("VmHWM")
}

// Probe sizes.
const (
	headConns      = 2000
	headBody       = 512 << 10 // body bytes each connection sends after its head
	idleConns      = 5000
	drainWorkers   = 8
	drainUnits     = 50000
	probeWriteTime = 20 * time.Second // bounds every write of the head probe
)

// BenchmarkProbeLargeHeadsRSS: 2,000 connections each send a request head
// announcing a 32 MiB byte string, then 512 KiB of its body (1 GiB in
// all), against a daemon with a 64 MiB request budget, and for contrast
// one with a 4 GiB budget that all of it fits. (A head announcing more
// than the budget is refused at once, costing nothing.) Reports the
// daemon's peak RSS over its RSS at start, the bound docs/limits.md gives
// (the budget plus, per connection, 64 KiB of free allowance and two
// 16 KiB buffers), and how many connections the daemon closed for want of
// budget.
func BenchmarkProbeLargeHeadsRSS(b *testing.B) {
	for _, budget := range []int64{64 << 20, 4 << 30} {
		b.Run(fmt.Sprintf("budget=%dMiB", budget>>20), func(b *testing.B) { probeLargeHeads(b, budget) })
	}
}

func probeLargeHeads(b *testing.B, budget int64) {
	if _, err := raiseFileLimit(); err != nil {
		b.Fatal(err)
	}
	head := []byte{0xD8, 0x18, 0x5A, 0x02, 0x00, 0x00, 0x00} // tag 24, a 32 MiB byte string: it would fit the budget
	frame := append(head, make([]byte, headBody)...)
	var grown, closedAll []float64
	for range b.N {
		d := startDaemonProcess(b, fmt.Sprintf("-listen 127.0.0.1:0 -backend memory: -request-budget %d -max-connections %d", budget, headConns+100))
		start, _ := d.rss(b)
		var closed atomic.Int64
		var wg sync.WaitGroup
		conns := make([]net.Conn, 0, headConns)
		for range headConns {
			nc, err := net.Dial("tcp", d.addr)
			if err != nil {
				b.Fatal(err)
			}
			nc.(*net.TCPConn).SetWriteBuffer(64 << 10) // keep the kernel's share small
			conns = append(conns, nc)
			wg.Add(1)
			go func() {
				defer wg.Done()
				nc.SetWriteDeadline(time.Now().Add(probeWriteTime))
				if _, err := nc.Write(frame); err != nil && !isTimeout(err) {
					closed.Add(1) // reset by the daemon: no budget in time
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		var peak int64
		for sampling := true; sampling; {
			select {
			case <-done:
				sampling = false
			case <-time.After(100 * time.Millisecond):
			}
			_, hwm := d.rss(b)
			peak = max(peak, hwm)
		}
		for _, nc := range conns {
			nc.Close()
		}
		b.Logf("RSS at start %d MiB, peak %d MiB, %d of %d connections closed", start>>20, peak>>20, closed.Load(), headConns)
		grown = append(grown, float64(peak-start)/(1<<20))
		closedAll = append(closedAll, float64(closed.Load()))
	}
	b.ReportMetric(median(grown), "RSS-growth-MiB")
	b.ReportMetric(float64(budget+headConns*(64<<10+32<<10))/(1<<20), "bound-MiB")
	b.ReportMetric(median(closedAll), "closed-conns")
	b.ReportMetric(0, "ns/op")
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// BenchmarkProbeIdleConnsDrain: 8 workers drain 50,000 units (get_work,
// then update_work_unit to FINISHED) from a volatile memory daemon, with
// 5,000 other connections open and idle (each made one call first), and
// alone before and after (their mean, so that the daemon's warming up
// does not favour either side). Reports both drain rates and their ratio.
func BenchmarkProbeIdleConnsDrain(b *testing.B) {
	if _, err := raiseFileLimit(); err != nil {
		b.Fatal(err)
	}
	var alone, crowded, ratio []float64
	for i := range b.N {
		d := startDaemonProcess(b, fmt.Sprintf("-listen 127.0.0.1:0 -backend memory: -max-connections %d", idleConns+100))
		before := drainRate(b, d.addr, fmt.Sprintf("alone-%d", i))
		idle := make([]*cborrpc.Client, 0, idleConns)
		for range idleConns {
			c, err := cborrpc.Dial(d.addr)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Call("list_work_specs", map[string]any{}); err != nil {
				b.Fatal(err)
			}
			idle = append(idle, c)
		}
		withIdle := drainRate(b, d.addr, fmt.Sprintf("crowded-%d", i))
		for _, c := range idle {
			c.Close()
		}
		after := drainRate(b, d.addr, fmt.Sprintf("after-%d", i))
		b.Logf("units/s: alone %.0f, with %d idle connections %.0f, alone again %.0f", before, idleConns, withIdle, after)
		alone = append(alone, (before+after)/2)
		crowded = append(crowded, withIdle)
		ratio = append(ratio, withIdle/((before+after)/2))
	}
	b.ReportMetric(median(alone), "alone-units/s")
	b.ReportMetric(median(crowded), "idle5000-units/s")
	b.ReportMetric(median(ratio), "ratio")
	b.ReportMetric(0, "ns/op")
}

// drainRate adds drainUnits units to a fresh spec and returns how many
// units per second drainWorkers workers finish.
func drainRate(b *testing.B, addr, spec string) float64 {
	b.Helper()
	c, err := cborrpc.Dial(addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call("set_work_spec", map[string]any{"name": []byte(spec), "min_gb": 0.1}); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < drainUnits; i += 1000 {
		units := make([]any, 0, 1000)
		for k := i; k < i+1000; k++ {
			units = append(units, []any{[]byte(fmt.Sprintf("u%06d", k)), map[string]any{}})
		}
		if _, err := c.Call("add_work_units", []byte(spec), units); err != nil {
			b.Fatal(err)
		}
	}
	var finished atomic.Int64
	errs := make(chan error, drainWorkers)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range drainWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- drainWorker(addr, fmt.Sprintf("w%d", w), &finished)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	if n := finished.Load(); n != drainUnits {
		b.Fatalf("%s: %d units finished, want %d", spec, n, drainUnits)
	}
	return float64(drainUnits) / elapsed.Seconds()
}

// drainWorker gets one unit at a time and finishes it until there is none.
func drainWorker(addr, id string, finished *atomic.Int64) error {
	c, err := cborrpc.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		res, err := c.Call("get_work", []byte(id), map[string]any{"max_jobs": 1})
		if err != nil {
			return err
		}
		pair, ok := res.(cborrpc.Tuple)
		if !ok || len(pair) != 2 {
			return fmt.Errorf("get_work reply %v (%T)", res, res)
		}
		work, ok := pair[0].(cborrpc.Tuple)
		if !ok || len(work) != 3 {
			return fmt.Errorf("get_work work %v (%T)", pair[0], pair[0])
		}
		if work[0] == nil {
			return nil
		}
		if _, err := c.Call("update_work_unit", work[0], work[1], map[string]any{"status": 4}); err != nil {
			return err
		}
		finished.Add(1)
	}
}

// median of a non-empty sample.
func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
