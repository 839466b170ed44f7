package metrics

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// GroupSource is the optional Source capability to describe the group
// coordinator; without it no group metric is exported. Its method is
// called like Source's.
type GroupSource interface {
	// Groups describes the groups this node coordinates.
	Groups() GroupStat
}

// GroupStat is the group coordinator as this node runs it: the groups of
// the __consumer_offsets partitions it leads and has loaded.
type GroupStat struct {
	// ByState counts the groups by Kafka's state name (Empty,
	// PreparingRebalance, CompletingRebalance, Stable, Dead).
	ByState map[string]int
	// ConsumerByState counts the KIP-848 consumer groups by Kafka's
	// state name (Empty, Assigning, Reconciling, Stable).
	ConsumerByState map[string]int
	// Offsets counts the committed offsets held.
	Offsets int
	// OffsetCommits counts the offsets OffsetCommit requests asked this
	// node to commit, Expired those removed by offsets.retention.minutes,
	// since the process started (Expired: since each shard loaded).
	OffsetCommits, Expired int64
	// Lag is each committed offset's distance to the partition's high
	// watermark, where this node hosts a replica of that partition.
	Lag []GroupLag
}

// GroupLag is one group's lag on one partition.
type GroupLag struct {
	Group, Topic string
	Partition    int32
	Records      int64
}

// groupStates are Kafka's classic group states, each with its own gauge
// (GroupMetadataManager NumGroups<State>).
var groupStates = []string{"PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty"}

var (
	numGroups      = desc("kafka_coordinator_group_groupmetadatamanager_numgroups", "Kafka GroupMetadataManager NumGroups: groups coordinated here.")
	numGroupsState = stateDescs()
	numOffsets     = desc("kafka_coordinator_group_groupmetadatamanager_numoffsets", "Kafka GroupMetadataManager NumOffsets: committed offsets held here.")
	offsetCommits  = desc("kafka_coordinator_group_group_coordinator_metrics_offset_commit_total", "Kafka group-coordinator-metrics offset-commit-count: offsets OffsetCommit requests asked this node to commit.")
	offsetExpired  = desc("kafka_coordinator_group_group_coordinator_metrics_offset_expiration_total", "Kafka group-coordinator-metrics offset-expiration-count: committed offsets removed by offsets.retention.minutes.")
	// Kafka 4's group-coordinator-metrics consumer-group-count{state}
	// and group-count{protocol}.
	consumerGroups = desc("kafka_coordinator_group_group_coordinator_metrics_consumer_group_count", "Kafka group-coordinator-metrics consumer-group-count: KIP-848 consumer groups coordinated here, by state.", "state")
	groupsByProto  = desc("kafka_coordinator_group_group_coordinator_metrics_group_count", "Kafka group-coordinator-metrics group-count: groups coordinated here, by protocol (classic, consumer).", "protocol")
	groupLag       = desc("sluice_group_lag_records", "Records between a group's committed offset and the partition's high watermark, computed by the group's coordinator (where it hosts a replica of the partition).", "group", "topic", "partition")
)

// stateDescs are the per-state NumGroups gauges, by state.
func stateDescs() map[string]*prometheus.Desc {
	m := map[string]*prometheus.Desc{}
	for _, s := range groupStates {
		m[s] = desc("kafka_coordinator_group_groupmetadatamanager_numgroups"+strings.ToLower(s),
			"Kafka GroupMetadataManager NumGroups"+s+": groups coordinated here in state "+s+".")
	}
	return m
}

// groupCollector exports a GroupSource.
type groupCollector struct{ src GroupSource }

func (c groupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{numGroups, numOffsets, offsetCommits, offsetExpired, groupLag, consumerGroups, groupsByProto} {
		ch <- d
	}
	for _, s := range groupStates {
		ch <- numGroupsState[s]
	}
}

func (c groupCollector) Collect(ch chan<- prometheus.Metric) {
	g := c.src.Groups()
	classic, consumer := 0, 0
	for _, n := range g.ByState {
		classic += n
	}
	for s, n := range g.ConsumerByState {
		consumer += n
		ch <- prometheus.MustNewConstMetric(consumerGroups, prometheus.GaugeValue, float64(n), strings.ToLower(s))
	}
	ch <- prometheus.MustNewConstMetric(groupsByProto, prometheus.GaugeValue, float64(classic), "classic")
	ch <- prometheus.MustNewConstMetric(groupsByProto, prometheus.GaugeValue, float64(consumer), "consumer")
	ch <- prometheus.MustNewConstMetric(numGroups, prometheus.GaugeValue, float64(classic+consumer))
	for _, s := range groupStates {
		ch <- prometheus.MustNewConstMetric(numGroupsState[s], prometheus.GaugeValue, float64(g.ByState[s]))
	}
	ch <- prometheus.MustNewConstMetric(numOffsets, prometheus.GaugeValue, float64(g.Offsets))
	ch <- prometheus.MustNewConstMetric(offsetCommits, prometheus.CounterValue, float64(g.OffsetCommits))
	ch <- prometheus.MustNewConstMetric(offsetExpired, prometheus.CounterValue, float64(g.Expired))
	for _, l := range g.Lag {
		ch <- prometheus.MustNewConstMetric(groupLag, prometheus.GaugeValue, float64(l.Records), l.Group, l.Topic, strconv.Itoa(int(l.Partition)))
	}
}
