// Command worker is an example Go worker for coordinate queues: it runs
// two tasks, "shout" and "sum", for work specs marked `runtime: go`, beside
// Python's coordinate_worker on the same daemon. Copy it as a start.
//
//	worker -address 127.0.0.1:5932 -concurrency 4
//
// A spec runs the task named by its `task` key, else its own name:
//
//	name: greetings
//	min_gb: 0          # required by `coordinate load`, as by the Python CLI
//	runtime: go
//	task: shout
//	then: next_spec    # optional: the units "shout" outputs go there
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/worker"
)

func main() {
	var (
		address     = flag.String("address", "127.0.0.1:5932", "daemon address (host:port)")
		configFile  = flag.String("c", "", "coordinate YAML config file (its coordinate.address wins over -address)")
		concurrency = flag.Int("concurrency", 2, "tasks run at once")
		maxJobs     = flag.Int("max-jobs", 1, "most units one task gets")
		lease       = flag.Duration("lease", 5*time.Minute, "lease asked for with each batch")
		idleMax     = flag.Duration("idle-max", 5*time.Second, "longest wait between polls of an idle worker")
	)
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*address, *configFile, worker.Config{
		Concurrency: *concurrency,
		MaxJobs:     *maxJobs,
		Lease:       *lease,
		IdleMin:     min(*idleMax, 200*time.Millisecond),
		IdleMax:     *idleMax,
		Logger:      log,
		Tasks:       map[string]worker.Task{"shout": shout, "sum": sum},
	}); err != nil {
		log.Error("worker", "err", err)
		os.Exit(1)
	}
}

func run(address, configFile string, cfg worker.Config) error {
	ccfg := client.DefaultConfig(address)
	if configFile != "" {
		var err error
		if ccfg, err = client.LoadConfig(configFile); err != nil {
			return err
		}
	}
	q, err := worker.NewRemote(ccfg)
	if err != nil {
		return err
	}
	defer q.Close()
	w, err := worker.New(q, cfg)
	if err != nil {
		return err
	}
	// The worker stops gracefully on SIGTERM itself; Ctrl-C too.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return w.Run(ctx)
}

// shout upper-cases the unit's "text" and outputs one unit for the spec's
// `then` successor, if it has one.
func shout(ctx context.Context, attempts []*worker.Attempt) {
	for _, a := range attempts {
		if ctx.Err() != nil {
			return // the rest are retried when their leases expire
		}
		var in struct {
			Text   string `cbor:"text"`
			DoneBy string `cbor:"done_by"`
		}
		if err := a.Unmarshal(&in); err != nil {
			_ = a.FailWith(ctx, err)
			continue
		}
		if in.DoneBy != "" {
			_ = a.FailWith(ctx, fmt.Errorf("already done by %s", in.DoneBy))
			continue
		}
		loud := strings.ToUpper(in.Text) + "!"
		data, err := a.DataWith(map[string]any{
			"shouted": loud,
			"done_by": "go",
			"output":  map[string]any{a.Key() + "-next": map[string]any{"from": a.Key(), "text": loud}},
		})
		if err != nil {
			_ = a.FailWith(ctx, err)
			continue
		}
		if err := a.Finish(ctx, data); err != nil {
			slog.Warn("finishing", "unit", a.String(), "err", err)
		}
	}
}

// sum adds up the unit's "numbers".
func sum(ctx context.Context, attempts []*worker.Attempt) {
	for _, a := range attempts {
		var in struct {
			Numbers []float64 `cbor:"numbers"`
		}
		if err := a.Unmarshal(&in); err != nil {
			_ = a.FailWith(ctx, err)
			continue
		}
		total := 0.0
		for _, n := range in.Numbers {
			total += n
		}
		data, err := a.DataWith(map[string]any{"sum": total, "done_by": "go"})
		if err != nil {
			_ = a.FailWith(ctx, err)
			continue
		}
		if err := a.Finish(ctx, data); err != nil {
			slog.Warn("finishing", "unit", a.String(), "err", err)
		}
	}
}
