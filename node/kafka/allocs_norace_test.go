//go:build !race

package kafka

// raceAllocSlack: see allocs_race_test.go; none without the race detector.
const raceAllocSlack = 0
