// Package stats holds the latency histogram and the Kafka perf-test summary
// line that sluice bench, sluice perf and sluice soak share, so the admin
// commands do not pull in the benchmark (and its NATS peer and plotting).
//
//	var h stats.Histogram
//	h.Record(time.Since(sent)) // concurrent, no allocation
//	fmt.Println(stats.PerfLine(n, rps, mbps, h.Summary()))
package stats
