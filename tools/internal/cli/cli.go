// Package cli holds what every command of bin/sluice shares.
package cli

import "errors"

// ErrProblem is returned when a command ran but found what its caller asked
// about (an unhealthy cluster, partitions matching a filter, a soak whose
// invariants failed); bin/sluice exits with status 2 for it.
var ErrProblem = errors.New("problem found")
