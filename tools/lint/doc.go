// Package lint holds the project's own lint test: rules of STYLE.md that gofmt
// and go vet do not check. It has no code of its own; run it with
// `go test ./tools/lint/` (make lint does).
package lint
