//go:build !invariants

package txn

// invariantsOn is off in production builds; see invariants_on.go.
const invariantsOn = false
