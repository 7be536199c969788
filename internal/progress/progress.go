// Package progress draws a one-line progress bar (count, rate, ETA) on a
// terminal for the long-running client commands (coordinate load/addwork/
// flow, coordinated migrate). On anything but a terminal it draws nothing,
// so scripted output stays clean.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// redrawEvery throttles redraws.
const redrawEvery = 100 * time.Millisecond

// width is the bar's width in cells.
const width = 24

// Bar is a progress bar; the zero value and nil draw nothing.
type Bar struct {
	mu      sync.Mutex
	w       io.Writer
	unit    string
	start   time.Time
	last    time.Time
	drawn   bool
	lineLen int
	now     func() time.Time
}

// IsTerminal reports whether f is a character device (a terminal).
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// New returns a bar that draws on w, counting unit ("units"); it draws
// nothing when enabled is false (pass IsTerminal(os.Stderr)).
func New(w io.Writer, unit string, enabled bool) *Bar {
	if !enabled {
		return nil
	}
	return &Bar{w: w, unit: unit, start: time.Now(), now: time.Now}
}

// Update redraws the bar for done of total (total 0: unknown) under label,
// at most every 100 ms.
func (b *Bar) Update(label string, done, total int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if b.drawn && now.Sub(b.last) < redrawEvery {
		return
	}
	b.draw(label, done, total, now)
}

// Finish draws the final state and ends the line.
func (b *Bar) Finish(label string, done, total int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.draw(label, done, total, b.now())
	fmt.Fprintln(b.w)
	b.drawn = false
	b.lineLen = 0
}

func (b *Bar) draw(label string, done, total int64, now time.Time) {
	b.last = now
	b.drawn = true
	elapsed := now.Sub(b.start).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done) / elapsed
	}
	var line string
	if total > 0 {
		frac := min(float64(done)/float64(total), 1)
		filled := int(frac * width)
		bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
		eta := "?"
		if rate > 0 && done <= total {
			eta = (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second).String()
		}
		line = fmt.Sprintf("%s [%s] %3.0f%% %d/%d %s %.0f/s ETA %s", label, bar, frac*100, done, total, b.unit, rate, eta)
	} else {
		line = fmt.Sprintf("%s %d %s %.0f/s", label, done, b.unit, rate)
	}
	pad := ""
	if n := b.lineLen - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	b.lineLen = len(line)
	fmt.Fprintf(b.w, "\r%s%s", line, pad)
}
