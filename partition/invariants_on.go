//go:build invariants

package partition

// invariantsOn turns on the costly self-checks (build tag invariants, which
// make test uses): the replica checks itself after every Step, Tick and
// Advance and panics, with context, on a violation.
const invariantsOn = true
