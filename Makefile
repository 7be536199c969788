# The two commands of the README: `make run` and `make test`.
.PHONY: run test build bench

build:
	go build -o bin/coordinated ./cmd/coordinated

run: build
	./bin/coordinated

test:
	scripts/test.sh

bench:
	go test -run '^$$' -bench . -benchmem ./...
