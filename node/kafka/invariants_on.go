//go:build invariants

package kafka

// invariantsOn turns on the costly self-checks (build tag invariants,
// which make test uses): every response is decoded back before it is sent.
const invariantsOn = true
