package cborrpc

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/internal/cborx"
)

// BenchmarkGetWorkCodec measures the server's per-request codec work for
// the hottest call: read and parse a get_work frame, encode the
// ((spec, key, data), None) response and wrap it.
func BenchmarkGetWorkCodec(b *testing.B) {
	frame := unhex(b, vecGetWork)
	data := cbor.RawMessage(unhex(b, "A2 41 78 01 46 6F 75 74 70 75 74 81 41 61"))
	src := bytes.NewReader(frame)
	br := bufio.NewReaderSize(src, connBufferSize)
	fr := frameReader{r: br, limit: DefaultMaxRequestSize}
	var out []byte
	bw := bufio.NewWriterSize(io.Discard, connBufferSize)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		src.Reset(frame)
		br.Reset(src)
		item, err := fr.next()
		if err != nil {
			b.Fatal(err)
		}
		c, _, err := parseTop(item, nil)
		if err != nil || c.req.Method != "get_work" {
			b.Fatal(err)
		}
		result := Tuple{Tuple{[]byte("ws1"), []byte("wu1"), data}, nil}
		payload, err := appendResult(out[:0], c.req.ID, result)
		if err != nil {
			b.Fatal(err)
		}
		out = payload
		var hdr [11]byte
		bw.Write(cborx.AppendHead(append(hdr[:0], 0xD8, 24), cborx.MajorBytes, uint64(len(payload))))
		bw.Write(payload)
	}
}

// BenchmarkServerPipelined measures server throughput over loopback TCP
// with 100 requests in flight on one connection.
func BenchmarkServerPipelined(b *testing.B) {
	ts := startServer(b, ServerOptions{})
	c := ts.dial(b)
	b.ReportAllocs()
	const window = 100
	inFlight := 0
	for b.Loop() {
		if _, err := c.Send("echo", 1); err != nil {
			b.Fatal(err)
		}
		inFlight++
		if inFlight == window {
			for ; inFlight > 0; inFlight-- {
				if _, _, err := c.Recv(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for ; inFlight > 0; inFlight-- {
		if _, _, err := c.Recv(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadLargeRequest measures reading one 8 MiB request (a large
// add_work_units) through the frame reader, as it arrives from a socket
// in 64 KiB reads.
func BenchmarkReadLargeRequest(b *testing.B) {
	body := bytes.Repeat([]byte{0x41}, 8<<20)
	frame := append([]byte{0xD8, 0x18, 0x5A, 0x00, 0x80, 0x00, 0x00}, body...)
	src := &chunkedReader{}
	br := bufio.NewReaderSize(src, connBufferSize)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		src.b = frame
		br.Reset(src)
		fr := frameReader{r: br, limit: DefaultMaxRequestSize}
		item, err := fr.next()
		if err != nil || len(item) != len(body) {
			b.Fatal(len(item), err)
		}
	}
}

// chunkedReader returns at most 64 KiB per Read, like a socket.
type chunkedReader struct{ b []byte }

func (r *chunkedReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 64<<10)], r.b)
	r.b = r.b[n:]
	return n, nil
}
