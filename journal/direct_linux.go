//go:build linux

package journal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// iocb is the kernel's struct iocb (linux/aio_abi.h, 64 bytes). key and
// rwFlags swap places on big-endian machines; both stay zero here.
type iocb struct {
	data      uint64
	key       uint32
	rwFlags   uint32
	opcode    uint16
	reqprio   int16
	fd        uint32
	buf       uint64
	nbytes    uint64
	offset    int64
	reserved2 uint64
	flags     uint32
	resfd     uint32
}

// ioEvent is the kernel's struct io_event.
type ioEvent struct {
	data, obj uint64
	res, res2 int64
}

const iocbCmdPwrite = 1

// aioWriter submits one O_DIRECT|O_DSYNC write at a time through Linux
// native AIO (io_submit, io_getevents): the write is on its way to the
// disk when submit returns, and wait returns once it is durable. A direct
// write with O_DSYNC is asynchronous to the caller on ext4 and XFS (the
// cache flush runs in the completion work), which a buffered one is not.
type aioWriter struct {
	f        *os.File
	ctx      uintptr // aio_context_t
	inflight int     // bytes of the write in flight (0: none)
}

// openAIOWriter opens path for direct, data-synchronous writes and sets
// up an AIO context for them. It fails where the filesystem refuses
// O_DIRECT (tmpfs) or the kernel AIO (seccomp, aio-max-nr).
func openAIOWriter(path string) (*aioWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return nil, err
	}
	w := &aioWriter{f: f}
	if _, _, e := syscall.Syscall(syscall.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&w.ctx)), 0); e != 0 {
		f.Close()
		return nil, fmt.Errorf("io_setup: %w", e)
	}
	return w, nil
}

// submit starts writing buf (block-aligned in memory, offset and length)
// at off. buf must not change until wait returns.
func (w *aioWriter) submit(buf []byte, off int64) error {
	if w.inflight != 0 {
		return errors.New("journal: a direct write is already in flight")
	}
	cb := iocb{
		opcode: iocbCmdPwrite,
		fd:     uint32(w.f.Fd()),
		buf:    uint64(uintptr(unsafe.Pointer(&buf[0]))),
		nbytes: uint64(len(buf)),
		offset: off,
	}
	cbs := [1]*iocb{&cb}
	for {
		n, _, e := syscall.Syscall(syscall.SYS_IO_SUBMIT, w.ctx, 1, uintptr(unsafe.Pointer(&cbs[0])))
		if e == syscall.EINTR || e == syscall.EAGAIN {
			continue
		}
		if e != 0 {
			return fmt.Errorf("io_submit: %w", e)
		}
		if n != 1 {
			return fmt.Errorf("io_submit took %d of 1 writes", n)
		}
		w.inflight = len(buf)
		return nil
	}
}

// wait blocks until the write in flight is durable, and reports its error
// (a short write is one).
func (w *aioWriter) wait() error {
	if w.inflight == 0 {
		return nil
	}
	var ev [1]ioEvent
	for {
		n, _, e := syscall.Syscall6(syscall.SYS_IO_GETEVENTS, w.ctx, 1, 1, uintptr(unsafe.Pointer(&ev[0])), 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return fmt.Errorf("io_getevents: %w", e)
		}
		if n != 1 {
			continue
		}
		want := w.inflight
		w.inflight = 0
		switch {
		case ev[0].res < 0:
			return syscall.Errno(-ev[0].res)
		case ev[0].res != int64(want):
			return fmt.Errorf("short direct write: %d of %d bytes", ev[0].res, want)
		}
		return nil
	}
}

// close waits for a write in flight and releases the file and context.
func (w *aioWriter) close() error {
	err := w.wait()
	syscall.Syscall(syscall.SYS_IO_DESTROY, w.ctx, 0, 0)
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}
