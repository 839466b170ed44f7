//go:build race

package bench

// raceOn: the race detector makes sync.Pool drop items, so allocation
// counts do not hold.
const raceOn = true
