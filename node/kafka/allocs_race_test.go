//go:build race

package kafka

// raceAllocSlack is what the race detector adds to TestProduceAllocs's
// count: sync.Pool drops a random quarter of what is put under it, so
// the frame pool misses and its buffers are allocated again (13-14 seen
// under -race against 11 without; the slack leaves room for bad luck).
const raceAllocSlack = 6
