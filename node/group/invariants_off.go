//go:build !invariants

package group

// invariantsOn is off in production builds; see invariants_on.go.
const invariantsOn = false
