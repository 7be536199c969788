# The two commands of the README: `make run` and `make test`.
.PHONY: run test build bench fuzz

build:
	go build -o bin/coordinated ./cmd/coordinated

run: build
	./bin/coordinated

test:
	scripts/test.sh

bench:
	go test -run '^$$' -bench . -benchmem ./...

# The fuzz targets of the journal and the memory backend's persistence,
# FUZZTIME each (scripts/test.sh runs them for 3 s). A failure leaves its
# input under the package's testdata/fuzz/ (commit it as a regression).
FUZZTIME ?= 5m
fuzz:
	go test ./journal -run '^$$' -fuzz '^FuzzReplay$$' -fuzztime $(FUZZTIME) -parallel 1
	go test ./memory -run '^$$' -fuzz '^FuzzSnapshotLoad$$' -fuzztime $(FUZZTIME)
	go test ./memory -run '^$$' -fuzz '^FuzzRecordApply$$' -fuzztime $(FUZZTIME)
