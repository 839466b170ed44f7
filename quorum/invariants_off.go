//go:build !invariants

package quorum

// invariantsOn is true in builds with -tags invariants: the FSM then checks
// the whole image after every applied entry.
const invariantsOn = false
