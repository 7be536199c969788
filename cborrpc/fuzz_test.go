package cborrpc

import (
	"errors"
	"io"
	"testing"

	"github.com/coordinated/coordinated/internal/cborx"
)

// FuzzReadRequest feeds arbitrary bytes through the server's frame reader
// and request parser: they must never panic, and whatever they accept must
// also be well-formed for the fxamacker decoder handlers use.
func FuzzReadRequest(f *testing.F) {
	for _, v := range []string{vecListWorkSpecs, vecGetWork, vecAddWorkUnits, vecUpdateWorkUnit} {
		f.Add(unhex(f, v))
	}
	f.Add(unhex(f, "83 A0 D8 18 41 A0 81 A1 42 69 64 01"))
	f.Add(unhex(f, "BF 42 69 64 01 5F 41 6D 41 65 FF 9F 01 FF FF"))
	f.Add(unhex(f, "D8 18 5F 41 A0 FF F6"))
	f.Add([]byte{0xF6})
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := frameReader{r: bufioReader(data), limit: 1 << 16}
		for i := 0; i < 64; i++ {
			item, err := fr.next()
			if err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, cborx.ErrTruncated) {
					return
				}
				var bad *cborx.MalformedError
				var over *oversizeError
				if !errors.As(err, &bad) && !errors.As(err, &over) {
					t.Fatalf("unexpected error type %T: %v", err, err)
				}
				return
			}
			c, closeConn, err := parseTop(item, nil)
			if err != nil || closeConn {
				return
			}
			if err := DecMode().Wellformed(item); err != nil {
				t.Fatalf("we accepted % X but fxamacker says: %v", item, err)
			}
			checkCall(t, &c)
		}
	})
}

// checkCall walks a parsed call: every raw item handed to a handler must be
// exactly one valid item.
func checkCall(t *testing.T, c *call) {
	for i := range c.batch {
		checkCall(t, &c.batch[i])
	}
	for _, p := range c.req.Params {
		if n, err := validate(p); err != nil || n != len(p) {
			t.Fatalf("param % X is not one item: %d %v", []byte(p), n, err)
		}
	}
	for _, p := range c.req.NamedParams {
		if n, err := validate(p); err != nil || n != len(p) {
			t.Fatalf("named param % X is not one item: %d %v", []byte(p), n, err)
		}
	}
}
