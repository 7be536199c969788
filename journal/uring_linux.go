//go:build linux

package journal

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

const (
	sysIOUringSetup = 425
	sysIOUringEnter = 426

	iouringOffSQRing = 0
	iouringOffCQRing = 0x8000000
	iouringOffSQEs   = 0x10000000

	iouringEnterGetEvents = 1
	iouringOpWrite        = 23
)

type ioSQRingOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type ioCQRingOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type ioUringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  ioSQRingOffsets
	cqOff                                                                  ioCQRingOffsets
}

type ioUringSQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	rwFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFD    int32
	addr3       uint64
	pad2        uint64
}

type ioUringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// aioWriter (io_uring version): one O_DIRECT write at a time; wait then
// fdatasyncs.
type aioWriter struct {
	f        *os.File
	ringFD   int
	sqRing   []byte
	cqRing   []byte
	sqes     []byte
	p        ioUringParams
	inflight int
}

func openAIOWriter(path string) (*aioWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return nil, err
	}
	w := &aioWriter{f: f}
	fd, _, e := syscall.Syscall(sysIOUringSetup, 2, uintptr(unsafe.Pointer(&w.p)), 0)
	if e != 0 {
		f.Close()
		return nil, fmt.Errorf("io_uring_setup: %w", e)
	}
	w.ringFD = int(fd)
	sqSize := int(w.p.sqOff.array + w.p.sqEntries*4)
	cqSize := int(w.p.cqOff.cqes + w.p.cqEntries*uint32(unsafe.Sizeof(ioUringCQE{})))
	if w.sqRing, err = syscall.Mmap(w.ringFD, iouringOffSQRing, sqSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE); err != nil {
		w.close()
		return nil, err
	}
	if w.cqRing, err = syscall.Mmap(w.ringFD, iouringOffCQRing, cqSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE); err != nil {
		w.close()
		return nil, err
	}
	if w.sqes, err = syscall.Mmap(w.ringFD, iouringOffSQEs, int(w.p.sqEntries)*64, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *aioWriter) u32(ring []byte, off uint32) *uint32 {
	return (*uint32)(unsafe.Pointer(&ring[off]))
}

func (w *aioWriter) submit(buf []byte, off int64) error {
	if w.inflight != 0 {
		return errors.New("journal: a direct write is already in flight")
	}
	tail := atomic.LoadUint32(w.u32(w.sqRing, w.p.sqOff.tail))
	mask := *w.u32(w.sqRing, w.p.sqOff.ringMask)
	idx := tail & mask
	sqe := (*ioUringSQE)(unsafe.Pointer(&w.sqes[idx*64]))
	*sqe = ioUringSQE{
		opcode: iouringOpWrite,
		fd:     int32(w.f.Fd()),
		off:    uint64(off),
		addr:   uint64(uintptr(unsafe.Pointer(&buf[0]))),
		len:    uint32(len(buf)),
	}
	*w.u32(w.sqRing, w.p.sqOff.array+idx*4) = idx
	atomic.StoreUint32(w.u32(w.sqRing, w.p.sqOff.tail), tail+1)
	for {
		n, _, e := syscall.Syscall6(sysIOUringEnter, uintptr(w.ringFD), 1, 0, 0, 0, 0)
		if e == syscall.EINTR || e == syscall.EAGAIN {
			continue
		}
		if e != 0 {
			return fmt.Errorf("io_uring_enter: %w", e)
		}
		if n != 1 {
			return fmt.Errorf("io_uring_enter submitted %d of 1", n)
		}
		w.inflight = len(buf)
		return nil
	}
}

func (w *aioWriter) wait() error {
	if w.inflight == 0 {
		return nil
	}
	headP := w.u32(w.cqRing, w.p.cqOff.head)
	tailP := w.u32(w.cqRing, w.p.cqOff.tail)
	for {
		head := atomic.LoadUint32(headP)
		if head != atomic.LoadUint32(tailP) {
			mask := *w.u32(w.cqRing, w.p.cqOff.ringMask)
			cqe := (*ioUringCQE)(unsafe.Pointer(&w.cqRing[w.p.cqOff.cqes+(head&mask)*16]))
			res := cqe.res
			atomic.StoreUint32(headP, head+1)
			want := w.inflight
			w.inflight = 0
			switch {
			case res < 0:
				return syscall.Errno(-res)
			case int(res) != want:
				return fmt.Errorf("short direct write: %d of %d bytes", res, want)
			}
			return nil
		}
		_, _, e := syscall.Syscall6(sysIOUringEnter, uintptr(w.ringFD), 0, 1, iouringEnterGetEvents, 0, 0)
		if e != 0 && e != syscall.EINTR && e != syscall.EAGAIN {
			return fmt.Errorf("io_uring_enter: %w", e)
		}
	}
}

func (w *aioWriter) close() error {
	err := w.wait()
	for _, m := range [][]byte{w.sqes, w.cqRing, w.sqRing} {
		if m != nil {
			syscall.Munmap(m)
		}
	}
	syscall.Close(w.ringFD)
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}
