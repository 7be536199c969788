package main

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/coordinated/coordinated/cborrpc"
)

// unhex decodes hex written with spaces, as in PROTOCOL §9.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProtocolByteExamples replays the byte-level examples of PROTOCOL §9
// against the daemon and compares the replies byte for byte.
func TestProtocolByteExamples(t *testing.T) {
	addr, _, stop := startDaemon(t)
	defer stop()
	c, err := cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	exchange := func(what, request, wantPayload string) {
		t.Helper()
		if err := c.SendRaw(unhex(t, request)); err != nil {
			t.Fatal(err)
		}
		got, err := c.RecvFrame()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if want := unhex(t, wantPayload); string(got) != string(want) {
			t.Errorf("%s:\n got % X\nwant % X", what, got, want)
		}
	}

	// §9.1 list_work_specs({}) on an empty server -> ([], None).
	exchange("9.1", "D8 18 58 25 A3 42 69 64 01 46 6D 65 74 68 6F 64 4F 6C 69 73 74 5F 77 6F 72 6B 5F 73 70 65 63 73 46 70 61 72 61 6D 73 81 A0",
		"A2 42 69 64 01 46 72 65 73 75 6C 74 D8 80 82 80 F6")
	// §9.2 get_work with no work: a triple of nulls for max_jobs 1 ...
	getWork := "D8 18 58 3B A3 42 69 64 07 46 6D 65 74 68 6F 64 48 67 65 74 5F 77 6F 72 6B 46 70 61 72 61 6D 73 82 44 39 66 33 61 A2 4A 6C 65 61 73 65 5F 74 69 6D 65 19 03 84 48 6D 61 78 5F 6A 6F 62 73 01"
	exchange("9.2 no work", getWork, "A2 42 69 64 07 46 72 65 73 75 6C 74 D8 80 82 D8 80 83 F6 F6 F6 F6")
	// ... and an empty list for max_jobs 10 (id 8).
	getTen := strings.Replace(getWork, "42 69 64 07", "42 69 64 08", 1)
	getTen = getTen[:len(getTen)-2] + "0A"
	exchange("9.2 max_jobs 10", getTen, "A2 42 69 64 08 46 72 65 73 75 6C 74 D8 80 82 80 F6")

	// set_work_spec({'name': 'ws1'}) so the next examples have a spec.
	if res, err := c.Call("set_work_spec", map[string]any{"name": []byte("ws1")}); err != nil {
		t.Fatalf("set_work_spec: %v %v", res, err)
	}
	// §9.3 add_work_units('ws1', [('wu1', {'x': 1}), ('wu2', {})]) -> (True, None).
	exchange("9.3", "D8 18 58 3B A3 42 69 64 03 46 6D 65 74 68 6F 64 4E 61 64 64 5F 77 6F 72 6B 5F 75 6E 69 74 73 46 70 61 72 61 6D 73 82 43 77 73 31 82 D8 80 82 43 77 75 31 A1 41 78 01 D8 80 82 43 77 75 32 A0",
		"A2 42 69 64 03 46 72 65 73 75 6C 74 D8 80 82 F5 F6")
	// §9.2 with work: (('ws1', 'wu1', {'x': 1}), None).
	exchange("9.2 work", getWork, "A2 42 69 64 07 46 72 65 73 75 6C 74 D8 80 82 D8 80 83 43 77 73 31 43 77 75 31 A1 41 78 01 F6")
	// §9.4 count_work_units('ws1') -> ({1: 1, 3: 1}, None).
	countReq, err := cborrpc.EncodeRequest(uint64(4), "count_work_units", []byte("ws1"))
	if err != nil {
		t.Fatal(err)
	}
	exchange("9.4", hex.EncodeToString(countReq), "A2 42 69 64 04 46 72 65 73 75 6C 74 D8 80 82 A2 01 01 03 01 F6")
	// §9.5 update_work_unit finishing wu1 -> (True, None).
	exchange("9.5", "D8 18 58 49 A3 42 69 64 05 46 6D 65 74 68 6F 64 50 75 70 64 61 74 65 5F 77 6F 72 6B 5F 75 6E 69 74 46 70 61 72 61 6D 73 83 43 77 73 31 43 77 75 31 A2 46 73 74 61 74 75 73 04 44 64 61 74 61 A2 41 78 01 46 6F 75 74 70 75 74 81 41 61",
		"A2 42 69 64 05 46 72 65 73 75 6C 74 D8 80 82 F5 F6")
}
