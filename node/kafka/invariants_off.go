//go:build !invariants

package kafka

// invariantsOn is off in production builds; see invariants_on.go.
const invariantsOn = false
