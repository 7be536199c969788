module github.com/coordinated/coordinated

go 1.26.8

require (
	github.com/creack/pty v1.1.24
	github.com/fxamacker/cbor/v2 v2.9.6
	github.com/jackc/pgx/v5 v5.12.0
	github.com/ugorji/go/codec v1.3.2
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
