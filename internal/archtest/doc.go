// Package archtest holds no code of its own: its test enforces the import
// rules of docs/architecture.md over `go list`, so an import that runs up
// a floor fails the build's tests instead of waiting for a review.
package archtest
