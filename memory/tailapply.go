package memory

import (
	"fmt"
)

// Replaying the journal after the snapshot (recovery only). Decoding a
// record (CBOR) costs about half as much as applying it, so the
// goroutine that reads the journal decodes while another applies what
// was decoded before, in the same order: the state is the one applying
// each record in turn gives.

// tailBatch is how many decoded records go to the applier at a time.
const tailBatch = 4096

// tailApplier applies decoded journal records on a goroutine of its own.
type tailApplier struct {
	b     *Backend
	batch []decodedRecord
	queue chan []decodedRecord // batches; nil asks for the result so far on res
	res   chan error
	err   error // the applier's first error, as last reported on res
}

// startTail starts the applier; stop must be called once replay is over.
func (b *Backend) startTail() *tailApplier {
	t := &tailApplier{b: b, batch: make([]decodedRecord, 0, tailBatch),
		queue: make(chan []decodedRecord, 2), res: make(chan error)}
	go t.run()
	return t
}

func (t *tailApplier) run() {
	var err error
	for batch := range t.queue {
		if batch == nil {
			t.res <- err
			continue
		}
		for i := range batch {
			if err == nil {
				err = t.b.applyDecoded(batch[i])
			}
		}
	}
	t.res <- err
}

// apply is the journal's apply callback: it decodes rec (only valid during
// the call; a decoded record shares nothing with it) and queues it. It
// returns the applier's error once one is known.
func (t *tailApplier) apply(rec []byte, format uint32) error {
	if t.err != nil {
		return t.err
	}
	d, err := decodeRecord(rec, format)
	if err != nil {
		return fmt.Errorf("memory: bad journal record: %w", err)
	}
	t.batch = append(t.batch, d)
	if len(t.batch) == tailBatch {
		t.queue <- t.batch
		t.batch = make([]decodedRecord, 0, tailBatch)
	}
	return nil
}

// applied waits until every record queued so far is applied and returns
// the applier's error, if any (journal.ReplayFuncs.Applied).
func (t *tailApplier) applied() error {
	if len(t.batch) > 0 {
		t.queue <- t.batch
		t.batch = make([]decodedRecord, 0, tailBatch)
	}
	t.queue <- nil
	t.err = <-t.res
	return t.err
}

// stop ends the applier (records queued but not waited for are applied
// first) and returns its error.
func (t *tailApplier) stop() error {
	close(t.queue)
	return <-t.res
}
