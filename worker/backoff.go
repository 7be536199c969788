package worker

import (
	"math/rand/v2"
	"time"
)

// backoff is the idle wait between empty get_work calls: doubling from
// min to max, each wait jittered to between half and all of it so idle
// workers do not poll in step.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	half := b.cur / 2
	return half + rand.N(b.cur-half+1)
}

func (b *backoff) reset() { b.cur = 0 }
