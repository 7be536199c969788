package worker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/internal/testdaemon"
)

// BenchmarkLongPollWakeup measures, through a daemon of ours over TCP, the
// time from add_work_units being sent to a waiting get_work (`wait` 30 s)
// being answered with the unit: the long-poll wake-up latency plus one
// add round trip.
func BenchmarkLongPollWakeup(b *testing.B) {
	for _, backend := range testdaemon.Backends {
		b.Run(backend, func(b *testing.B) {
			addr := testdaemon.Ours(b, backend)
			adder, err := client.Dial(addr)
			if err != nil {
				b.Fatal(err)
			}
			defer adder.Close()
			ctx := context.Background()
			spec := map[any]any{cbor.ByteString("name"): []byte("lp"), cbor.ByteString("runtime"): []byte("go")}
			if err := adder.SetWorkSpec(ctx, spec); err != nil {
				b.Fatal(err)
			}
			poller, err := cborrpc.Dial(addr)
			if err != nil {
				b.Fatal(err)
			}
			defer poller.Close()
			opts := map[string]any{"runtime": "go", "wait": 30, "max_jobs": 1, "lease_time": 60}
			var total time.Duration
			for i := 0; b.Loop(); i++ {
				got := make(chan error, 1)
				go func() {
					_, err := poller.Call("get_work", []byte("w"), opts)
					got <- err
				}()
				// Let the get_work reach the daemon and park (not timed:
				// b.Loop times the whole iteration, the figure reported
				// is wake-ms).
				time.Sleep(2 * time.Millisecond)
				start := time.Now()
				if err := adder.AddWorkUnits(ctx, "lp", []client.NewUnit{{Key: []byte(strconv.Itoa(i)), Data: map[any]any{}}}); err != nil {
					b.Fatal(err)
				}
				if err := <-got; err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "wake-ms")
		})
	}
}

// BenchmarkIdleLongPollers measures the CPU a separate daemon process
// (memory backend) spends while 1,000 idle workers wait on it, each with
// one connection: long-polling (get_work `wait` 30 s, as the Go worker
// does) against polling every second (as an idle Python worker with
// poll_interval 1 does); and long-polling while units are added to a spec
// none of them runs, 100 adds a second (every add wakes every waiter:
// the hold-off bounds what that costs). It reports the daemon's CPU
// seconds per wall second over a 10 s window (cpu-s/s). Set
// COORDINATED_BIN to a built daemon, else it is built.
func BenchmarkIdleLongPollers(b *testing.B) {
	bin := os.Getenv("COORDINATED_BIN")
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "coordinated")
		out, err := exec.Command("go", "build", "-o", bin, "../cmd/coordinated").CombinedOutput()
		if err != nil {
			b.Fatalf("building the daemon: %v\n%s", err, out)
		}
	}
	const workers = 1000
	const window = 10 * time.Second
	for _, mode := range []string{"longpoll", "poll1s", "longpoll+adds"} {
		b.Run(mode, func(b *testing.B) {
			addr, pid := startDaemonProcess(b, bin)
			conns := make([]*cborrpc.Client, workers)
			for i := range conns {
				c, err := cborrpc.Dial(addr)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				conns[i] = c
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for i, c := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					worker := []byte(fmt.Sprintf("w%d", i))
					for ctx.Err() == nil {
						if mode != "poll1s" {
							c.Call("get_work", worker, map[string]any{"runtime": "go", "wait": 30})
							continue
						}
						c.Call("get_work", worker, map[string]any{})
						select {
						case <-ctx.Done():
						case <-time.After(time.Second):
						}
					}
				}()
			}
			if mode == "longpoll+adds" {
				adder, err := client.Dial(addr)
				if err != nil {
					b.Fatal(err)
				}
				defer adder.Close()
				if err := adder.SetWorkSpec(ctx, map[any]any{cbor.ByteString("name"): []byte("other")}); err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ctx.Err() == nil; i++ {
						adder.AddWorkUnits(ctx, "other", []client.NewUnit{{Key: []byte(strconv.Itoa(i)), Data: map[any]any{}}})
						time.Sleep(10 * time.Millisecond)
					}
				}()
			}
			time.Sleep(2 * time.Second) // every worker connected and parked
			for b.Loop() {
				before := cpuSeconds(b, pid)
				time.Sleep(window)
				b.ReportMetric((cpuSeconds(b, pid)-before)/window.Seconds(), "cpu-s/s")
			}
			cancel()
			for _, c := range conns {
				c.Close() // unblocks long polls
			}
			wg.Wait()
		})
	}
}

// startDaemonProcess starts the daemon binary on a free port with a
// volatile memory backend and returns its address and pid.
func startDaemonProcess(b *testing.B, bin string) (string, int) {
	b.Helper()
	port := freePort(b)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "-listen", addr, "-backend", "memory:")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := cborrpc.Dial(addr)
		if err == nil {
			c.Close()
			return addr, cmd.Process.Pid
		}
		if time.Now().After(deadline) {
			b.Fatalf("daemon did not listen on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePort returns a TCP port free on 127.0.0.1 just now.
func freePort(b *testing.B) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// cpuSeconds reads a process's user+system CPU time from /proc.
func cpuSeconds(b *testing.B, pid int) float64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name (which may contain spaces).
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// BenchmarkWorkerThroughput is units/s of no-op tasks through a daemon of
// ours: 8 Go workers (one task at a time each) on one queue, batch 1 and
// 100. Compare with cmd/coordbench's drain1/drain100 (the raw protocol
// loop) on the same machine for the library's overhead.
func BenchmarkWorkerThroughput(b *testing.B) {
	const units = 4000
	for _, backend := range testdaemon.Backends {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/batch%d", backend, batch), func(b *testing.B) {
				addr := testdaemon.Ours(b, backend)
				c, err := client.Dial(addr)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				ctx := context.Background()
				for round := 0; b.Loop(); round++ {
					name := fmt.Sprintf("tp%d", round)
					spec := map[any]any{cbor.ByteString("name"): []byte(name), cbor.ByteString("runtime"): []byte("go"), cbor.ByteString("task"): []byte("noop")}
					if err := c.SetWorkSpec(ctx, spec); err != nil {
						b.Fatal(err)
					}
					add := make([]client.NewUnit, units)
					for i := range add {
						add[i] = client.NewUnit{Key: []byte(strconv.Itoa(i)), Data: map[any]any{}}
					}
					if err := c.AddWorkUnits(ctx, name, add); err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					runWorkers(b, addr, batch, func() bool {
						n, err := c.CountWorkUnits(ctx, name)
						return err == nil && n[4] == units
					})
					b.ReportMetric(units/time.Since(start).Seconds(), "units/s")
				}
			})
		}
	}
}

// runWorkers runs 8 workers until done reports true.
func runWorkers(b *testing.B, addr string, batch int, done func() bool) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 8 {
		q, err := NewRemote(client.DefaultConfig(addr))
		if err != nil {
			b.Fatal(err)
		}
		defer q.Close()
		w, err := New(q, Config{MaxJobs: batch, NoSignals: true, LongPoll: -1, IdleMin: time.Millisecond, IdleMax: 10 * time.Millisecond,
			Logger: slog.New(slog.DiscardHandler), Tasks: map[string]Task{"noop": finishAll}})
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Run(ctx)
		}()
	}
	for !done() {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	wg.Wait()
}
