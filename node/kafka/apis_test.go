package kafka

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTableRowsFollowCapabilities: a row needing an optional capability is
// in the table (listed by ApiVersions, dispatched) exactly when the Broker
// has it, and Fetch goes past v12 only with TopicNames.
func TestTableRowsFollowCapabilities(t *testing.T) {
	base := []kmsg.Key{kmsg.Metadata, kmsg.ApiVersions, kmsg.DescribeCluster, kmsg.FindCoordinator, kmsg.SASLHandshake, kmsg.SASLAuthenticate, kmsg.DescribeTopicPartitions}
	type logsNames struct {
		Broker
		Logs
		TopicNames
	}
	for _, tc := range []struct {
		name     string
		b        Broker
		more     []kmsg.Key
		fetchMax int16
	}{
		{"bare", struct{ Broker }{}, nil, 0},
		{"TopicAdmin", struct {
			Broker
			TopicAdmin
		}{}, []kmsg.Key{kmsg.CreateTopics, kmsg.DeleteTopics}, 0},
		{"Logs", struct {
			Broker
			Logs
		}{}, []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.OffsetForLeaderEpoch}, 12},
		{"Logs+TopicNames", logsNames{}, []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.OffsetForLeaderEpoch}, 15},
		{"ProducerIDs", struct {
			Broker
			ProducerIDs
		}{}, []kmsg.Key{kmsg.InitProducerID}, 0},
		{"Configs", struct {
			Broker
			Configs
		}{}, []kmsg.Key{kmsg.DescribeConfigs, kmsg.IncrementalAlterConfigs}, 0},
		{"Elector", struct {
			Broker
			Elector
		}{}, []kmsg.Key{kmsg.ElectLeaders}, 0},
		{"QuorumDescriber", struct {
			Broker
			QuorumDescriber
		}{}, []kmsg.Key{kmsg.DescribeQuorum}, 0},
		{"PartitionAdmin", struct {
			Broker
			PartitionAdmin
		}{}, []kmsg.Key{kmsg.CreatePartitions}, 0},
		{"ScramAdmin", struct {
			Broker
			ScramAdmin
		}{}, []kmsg.Key{kmsg.DescribeUserSCRAMCredentials, kmsg.AlterUserSCRAMCredentials}, 0},
		{"Groups", struct {
			Broker
			Groups
		}{}, []kmsg.Key{kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.JoinGroup, kmsg.Heartbeat, kmsg.LeaveGroup, kmsg.SyncGroup,
			kmsg.DescribeGroups, kmsg.ListGroups, kmsg.DeleteGroups, kmsg.OffsetDelete,
			kmsg.TxnOffsetCommit, kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := newTable(tc.b)
			want := slices.Concat(base, tc.more)
			slices.Sort(want)
			var got []kmsg.Key
			for _, a := range tab.apis {
				got = append(got, a.key)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("keys %v, want %v", got, want)
			}
			for k := range int16(kmsg.MaxKey + 1) {
				if (tab.lookup(k) != nil) != slices.Contains(want, kmsg.Key(k)) {
					t.Errorf("lookup(%d) disagrees with the listed keys", k)
				}
			}
			if tc.fetchMax != 0 && tab.lookup(int16(kmsg.Fetch)).max != tc.fetchMax {
				t.Errorf("Fetch max %d, want %d", tab.lookup(int16(kmsg.Fetch)).max, tc.fetchMax)
			}
		})
	}
}
