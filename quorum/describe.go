package quorum

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Describe formats the image (or, with a topic name, one topic) as stable,
// human-readable text: brokers, then topics in name order. Tests compare it;
// the admin CLI prints it.
func (im *Image) Describe(topic string) string {
	var b strings.Builder
	if topic == "" {
		if im.ClusterID != "" {
			fmt.Fprintf(&b, "cluster %s\n", im.ClusterID)
		}
		for _, id := range im.SortedBrokers() {
			br := im.Brokers[id]
			fmt.Fprintf(&b, "broker %d epoch=%d", id, br.Epoch)
			if br.Rack != "" {
				fmt.Fprintf(&b, " rack=%s", br.Rack)
			}
			if br.Fenced {
				b.WriteString(" fenced")
			}
			if br.ShuttingDown {
				b.WriteString(" shutting-down")
			}
			for _, d := range br.OfflineLogDirs {
				fmt.Fprintf(&b, " log-dir-offline=%s", d)
			}
			b.WriteString("\n")
		}
		for _, name := range slices.Sorted(maps.Keys(im.BrokerConfigs)) {
			if name == "" {
				name = "<default>"
			}
			fmt.Fprintf(&b, "broker-config %s %s\n", name, formatConfigs(im.BrokerConfigs[strings.TrimPrefix(name, "<default>")]))
		}
		if im.NextProducerID > 0 {
			fmt.Fprintf(&b, "next-producer-id %d\n", im.NextProducerID)
		}
		for _, name := range slices.Sorted(maps.Keys(im.Features)) {
			fmt.Fprintf(&b, "feature %s=%d epoch=%d\n", name, im.Features[name], im.FeaturesEpoch)
		}
	}
	for _, name := range im.SortedTopics() {
		if topic != "" && name != topic {
			continue
		}
		t := im.Topics[name]
		fmt.Fprintf(&b, "topic %s", name)
		if len(t.Configs) > 0 {
			fmt.Fprintf(&b, " configs=%s", formatConfigs(t.Configs))
		}
		b.WriteString("\n")
		for i, p := range t.Partitions {
			fmt.Fprintf(&b, "  %d: %s\n", i, p)
			for _, u := range p.UncleanElections {
				fmt.Fprintf(&b, "     unclean election: leader=%d leader-epoch=%d lost-isr=%v\n", u.Leader, u.LeaderEpoch, u.LostISR)
			}
		}
	}
	return b.String()
}

// UncleanRecord is one recorded unclean election, with its partition.
type UncleanRecord struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	UncleanElection
}

// UncleanElections lists every unclean election recorded in the image, by
// topic and partition: the possible data loss that metrics and the admin CLI
// must show (DESIGN.md: unclean elections are never silent).
func (im *Image) UncleanElections() []UncleanRecord {
	var out []UncleanRecord
	for _, name := range im.SortedTopics() {
		for i, p := range im.Topics[name].Partitions {
			for _, u := range p.UncleanElections {
				out = append(out, UncleanRecord{Topic: name, Partition: int32(i), UncleanElection: u})
			}
		}
	}
	return out
}
