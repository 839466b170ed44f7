//go:build invariants

package group

// invariantsOn turns on the costly self-checks (build tag invariants, which
// make test uses): the shard checks itself after every Step, Appended and
// TickTo and panics, with context, on a violation.
const invariantsOn = true
