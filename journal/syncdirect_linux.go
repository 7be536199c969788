//go:build linux

package journal

import (
	"fmt"
	"os"
	"syscall"
)

// aioWriter (synchronous version): one O_DIRECT|O_DSYNC pwrite.
type aioWriter struct {
	f   *os.File
	err error
}

func openAIOWriter(path string) (*aioWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT|syscall.O_DSYNC, 0)
	if err != nil {
		return nil, err
	}
	return &aioWriter{f: f}, nil
}

func (w *aioWriter) submit(buf []byte, off int64) error {
	n, err := w.f.WriteAt(buf, off)
	if err == nil && n != len(buf) {
		err = fmt.Errorf("short direct write: %d of %d bytes", n, len(buf))
	}
	w.err = err
	return nil
}

func (w *aioWriter) wait() error {
	err := w.err
	w.err = nil
	return err
}

func (w *aioWriter) close() error { return w.f.Close() }
