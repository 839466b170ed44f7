//go:build !invariants

package partition

// invariantsOn is off in production builds; see invariants_on.go.
const invariantsOn = false
