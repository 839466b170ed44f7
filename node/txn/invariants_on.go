//go:build invariants

package txn

// invariantsOn turns on the costly self-checks (build tag invariants, which
// make test uses): the shard checks itself after every event and panics,
// with context, on a violation.
const invariantsOn = true
