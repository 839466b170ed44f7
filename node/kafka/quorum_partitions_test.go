package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeQuorumWire: only __cluster_metadata-0 is described; the
// answer carries the voters, observers and (v2) the voters' listeners.
func TestDescribeQuorumWire(t *testing.T) {
	ts, _ := startDataServer(t)
	c := dial(t, ts.addr)
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "orders"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	resp := c.roundTrip(req).(*kmsg.DescribeQuorumResponse)
	if resp.ErrorCode != kerr.InvalidRequest.Code || resp.ErrorMessage == nil {
		t.Fatalf("another topic: error %d %v, want INVALID_REQUEST with a message", resp.ErrorCode, resp.ErrorMessage)
	}
	req.Topics[0].Topic = MetadataTopic
	resp = c.roundTrip(req).(*kmsg.DescribeQuorumResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("response %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.LeaderID != 1 || p.LeaderEpoch != 3 || p.HighWatermark != 10 || len(p.CurrentVoters) != 2 || len(p.Observers) != 1 {
		t.Fatalf("partition %+v", p)
	}
	if v := p.CurrentVoters[1]; v.ReplicaID != 2 || v.LogEndOffset != 7 || v.LastCaughtUpTimestamp != -1 {
		t.Fatalf("voter 2: %+v", v)
	}
	if len(resp.Nodes) != 1 || resp.Nodes[0].NodeID != 1 || resp.Nodes[0].Listeners[0].Port != 9093 {
		t.Fatalf("nodes %+v", resp.Nodes)
	}
}

// TestCreatePartitionsWire: what the request alone shows to be wrong is
// refused per topic; the rest reaches the PartitionAdmin.
func TestCreatePartitionsWire(t *testing.T) {
	ts, _ := startDataServer(t)
	c := dial(t, ts.addr)
	topic := func(name string, count int32, assign ...[]int32) kmsg.CreatePartitionsRequestTopic {
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = name, count
		for _, a := range assign {
			t.Assignment = append(t.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: a})
		}
		return t
	}
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = 3
	req.Topics = []kmsg.CreatePartitionsRequestTopic{
		topic("orders", 4),
		topic("dup", 3), topic("dup", 4),
		topic("zero", 0),
		topic("empty", 3, []int32{}),
		topic("twice", 3, []int32{1, 1}),
		topic("nope", 3),
	}
	resp := c.roundTrip(req).(*kmsg.CreatePartitionsResponse)
	want := []struct {
		name string
		code int16
	}{
		{"orders", 0},
		{"dup", kerr.InvalidRequest.Code},
		{"zero", kerr.InvalidPartitions.Code},
		{"empty", kerr.InvalidReplicaAssignment.Code},
		{"twice", kerr.InvalidReplicaAssignment.Code},
		{"nope", kerr.UnknownTopicOrPartition.Code},
	}
	if len(resp.Topics) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(resp.Topics), len(want), resp.Topics)
	}
	for i, w := range want {
		if got := resp.Topics[i]; got.Topic != w.name || got.ErrorCode != w.code {
			t.Errorf("result %d: %s code %d, want %s code %d", i, got.Topic, got.ErrorCode, w.name, w.code)
		}
	}
}
