//go:build !invariants

package kafka

// invariantsEnabled is off in production builds; see invariants_on.go.
const invariantsEnabled = false
