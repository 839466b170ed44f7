//go:build race

package kafka

// raceAllocSlack is what the race detector adds to TestProduceAllocs's
// count: sync.Pool drops a random quarter of what is put under it, so
// the frame pool misses and its buffers are allocated again.
const raceAllocSlack = 3
