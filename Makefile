# The two commands of the README: `make run` and `make test`.
.PHONY: run test test-go build bench

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
