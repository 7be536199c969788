package main

import (
	"context"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/internal/testdaemon"
)

// TestWorkersPrintStrLikePython: `workers` formats modes and heartbeat
// values with '{0}'.format(), i.e. Python 2's str(): a float shows 12
// significant digits (0.3, 1e+11, 1700000000.12), not its repr, while a
// container shows its items' repr.
func TestWorkersPrintStrLikePython(t *testing.T) {
	for _, name := range []string{"memory", "python"} {
		t.Run(name, func(t *testing.T) {
			var addr string
			if name == "python" {
				addr = testdaemon.Python(t)
			} else {
				addr = testdaemon.Ours(t, name)
			}
			e := newCLIEnv(t, addr)
			ctx := context.Background()
			c, err := client.Dial(addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const third = 0.30000000000000004 // 0.1+0.2 at run time
			for _, w := range []struct {
				id       string
				mode, hb any
			}{
				{"w-third", third, map[any]any{bs("load"): third}},
				{"w-big", 1e11, map[any]any{bs("start_time"): 1700000000.123456}},
				{"w-small", 99999999999.0, map[any]any{bs("age"): 1e16}},
				{"w-list", []any{third, uint64(1)}, map[any]any{bs("n"): uint64(1) << 63}},
			} {
				if err := c.WorkerHeartbeat(ctx, w.id, w.mode, 6000, w.hb, nil); err != nil {
					t.Fatal(err)
				}
			}
			e.same("workers")
			want, _ := e.py("", "workers", "--details")
			got, _, _ := e.goRun("", "workers", "--details")
			if heartbeatLines(got) != heartbeatLines(want) {
				t.Errorf("coordinate workers --details:\n--- python\n%s--- go\n%s", want, got)
			}
		})
	}
}

var ageSeconds = regexp.MustCompile(`(?m)^  age_seconds: .*\n`)

// heartbeatLines is `workers --details` output with each worker's
// heartbeat lines sorted (Python prints them in its dict's hash order) and
// without our daemon's age_seconds, which the Python daemon does not send.
func heartbeatLines(out string) string {
	var blocks [][]string
	for _, line := range strings.SplitAfter(ageSeconds.ReplaceAllString(out, ""), "\n") {
		if !strings.HasPrefix(line, "  ") || len(blocks) == 0 {
			blocks = append(blocks, nil)
		}
		blocks[len(blocks)-1] = append(blocks[len(blocks)-1], line)
	}
	var b strings.Builder
	for _, bl := range blocks {
		sort.Strings(bl[1:])
		b.WriteString(strings.Join(bl, ""))
	}
	return b.String()
}
