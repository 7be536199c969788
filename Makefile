# The two commands of the README: `make run` and `make test`.
.PHONY: run test test-go build bench bench-load

build:
	go build -o bin/coordinated ./cmd/coordinated

run: build
	./bin/coordinated

test:
	scripts/test.sh

# The Go half of `make test` (with its throwaway PostgreSQL): a quick green loop.
test-go:
	scripts/test.sh go

bench:
	go test -run '^$$' -bench . -benchmem ./...

# Load a 1,000,000-line units file with the Go coordinate CLI: units/s and
# the CLI's peak RSS, against an in-process memory daemon.
bench-load:
	go test -run '^$$' -bench LoadMillion -benchtime 1x ./cmd/coordinate
