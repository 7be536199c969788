//go:build !linux

package journal

import "errors"

// aioWriter exists only on Linux; elsewhere segments keep their
// synchronous writes.
type aioWriter struct{}

func openAIOWriter(string) (*aioWriter, error) {
	return nil, errors.New("direct asynchronous writes need Linux")
}

func (*aioWriter) submit([]byte, int64) error { return errors.New("unsupported") }
func (*aioWriter) wait() error                { return nil }
func (*aioWriter) close() error               { return nil }
