package kafka

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func metadataRequest(v int16, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = v
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestMetadataEveryVersion asks for a known and an unknown topic at every
// version and checks each field the version carries.
func TestMetadataEveryVersion(t *testing.T) {
	ts := startServer(t, Options{})
	c := dial(t, ts.addr)
	for v := int16(0); v <= 12; v++ {
		req := metadataRequest(v, "orders", "nope", "orders")
		req.AllowAutoTopicCreation = false
		resp := c.roundTrip(req).(*kmsg.MetadataResponse)

		if q := ts.broker.lastQuery(); q.AllTopics || len(q.Topics) != 2 || q.AllowAutoCreate != (v < 4) {
			t.Errorf("v%d: broker asked %+v, want orders and nope once, auto-create %v", v, q, v < 4)
		}
		if len(resp.Brokers) != 2 || resp.Brokers[0].NodeID != 1 || resp.Brokers[1].NodeID != 2 {
			t.Fatalf("v%d: brokers %+v", v, resp.Brokers)
		}
		wantRack := v >= 1
		if got := resp.Brokers[0].Rack != nil && *resp.Brokers[0].Rack == "rack-a"; got != wantRack {
			t.Errorf("v%d: rack %v, want present=%v", v, resp.Brokers[0].Rack, wantRack)
		}
		if resp.Brokers[1].Rack != nil {
			t.Errorf("v%d: broker 2 rack %q, want null", v, *resp.Brokers[1].Rack)
		}
		if v >= 1 && resp.ControllerID != 2 {
			t.Errorf("v%d: controller %d, want 2", v, resp.ControllerID)
		}
		if v >= 2 && (resp.ClusterID == nil || *resp.ClusterID != "sluice-test-cluster") {
			t.Errorf("v%d: cluster id %v", v, resp.ClusterID)
		}
		if len(resp.Topics) != 2 {
			t.Fatalf("v%d: %d topics, want 2", v, len(resp.Topics))
		}
		orders, nope := resp.Topics[0], resp.Topics[1]
		if *orders.Topic != "orders" || orders.ErrorCode != 0 || len(orders.Partitions) != 3 {
			t.Fatalf("v%d: orders = %+v", v, orders)
		}
		if *nope.Topic != "nope" || nope.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("v%d: nope = %+v, want UNKNOWN_TOPIC_OR_PARTITION", v, nope)
		}
		if want := [16]byte{}; v >= 10 {
			if orders.TopicID != ordersID {
				t.Errorf("v%d: topic id %x, want %x", v, orders.TopicID, ordersID)
			}
		} else if orders.TopicID != want {
			t.Errorf("v%d: topic id %x decoded from a version without ids", v, orders.TopicID)
		}
		p0, p2 := orders.Partitions[0], orders.Partitions[2]
		if p0.Leader != 1 || !slices.Equal(p0.Replicas, []int32{1, 2}) || !slices.Equal(p0.ISR, []int32{1, 2}) || p0.ErrorCode != 0 {
			t.Errorf("v%d: partition 0 = %+v", v, p0)
		}
		if p2.Leader != -1 || p2.ErrorCode != kerr.LeaderNotAvailable.Code || len(p2.ISR) != 0 {
			t.Errorf("v%d: partition 2 = %+v", v, p2)
		}
		if wantEpoch := int32(7); v >= 7 && p0.LeaderEpoch != wantEpoch {
			t.Errorf("v%d: leader epoch %d, want %d", v, p0.LeaderEpoch, wantEpoch)
		}
		if v >= 5 && !slices.Equal(p2.OfflineReplicas, []int32{2}) {
			t.Errorf("v%d: offline replicas %v, want [2]", v, p2.OfflineReplicas)
		}
	}
}

func TestMetadataWhichTopics(t *testing.T) {
	ts := startServer(t, Options{})
	c := dial(t, ts.addr)

	// v0: an empty array means every topic.
	resp := c.roundTrip(metadataRequest(0)).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 2 || !ts.broker.lastQuery().AllTopics {
		t.Errorf("v0 empty: %d topics, want all 2", len(resp.Topics))
	}
	// v1+: null means every topic, with the internal flag.
	resp = c.roundTrip(metadataRequest(1)).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 2 || !resp.Topics[1].IsInternal || resp.Topics[0].IsInternal {
		t.Errorf("v1 null: topics %+v, want both with __consumer_offsets internal", resp.Topics)
	}
	// v1+: an empty array means none, but brokers still come back.
	req := metadataRequest(4)
	req.Topics = []kmsg.MetadataRequestTopic{}
	resp = c.roundTrip(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 0 || len(resp.Brokers) != 2 || ts.broker.lastQuery().AllTopics {
		t.Errorf("v4 empty: %d topics %d brokers, want 0 and 2", len(resp.Topics), len(resp.Brokers))
	}
	// v4+: allow_auto_topic_creation reaches the broker.
	req = metadataRequest(9, "new-topic")
	req.AllowAutoTopicCreation = true
	c.roundTrip(req)
	if q := ts.broker.lastQuery(); !q.AllowAutoCreate {
		t.Errorf("v9: auto-create not passed: %+v", q)
	}
}

func TestMetadataTopicIDs(t *testing.T) {
	ts := startServer(t, Options{})
	c := dial(t, ts.addr)

	unknown := [16]byte{9, 9, 9}
	req := metadataRequest(12)
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: offsetID}, {TopicID: unknown}}
	resp := c.roundTrip(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 2 {
		t.Fatalf("v12 by id: %d topics", len(resp.Topics))
	}
	if got := resp.Topics[0]; got.Topic == nil || *got.Topic != "__consumer_offsets" || got.TopicID != offsetID || got.ErrorCode != 0 {
		t.Errorf("v12 by id: %+v", got)
	}
	if got := resp.Topics[1]; got.Topic != nil || got.TopicID != unknown || got.ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("v12 unknown id: %+v, want null name and UNKNOWN_TOPIC_ID", got)
	}

	// v10 and v11 may not ask by id: the whole request is invalid.
	for _, v := range []int16{10, 11} {
		req := metadataRequest(v, "orders")
		req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{TopicID: ordersID})
		resp := c.roundTrip(req).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 0 || len(resp.Topics) != 2 {
			t.Fatalf("v%d by id: %d brokers %d topics, want 0 and 2", v, len(resp.Brokers), len(resp.Topics))
		}
		for _, rt := range resp.Topics {
			if rt.ErrorCode != kerr.InvalidRequest.Code {
				t.Errorf("v%d by id: topic error %d, want INVALID_REQUEST", v, rt.ErrorCode)
			}
		}
	}
}

func TestMetadataBrokerErrorClosesConnection(t *testing.T) {
	ts := startServer(t, Options{})
	ts.broker.mu.Lock()
	ts.broker.err = errors.New("quorum unreachable")
	ts.broker.mu.Unlock()
	c := dial(t, ts.addr)
	c.send(metadataRequest(12, "orders"))
	c.expectClosed()
	ts.logs.waitFor(t, "closing connection: request failed", "quorum unreachable", "client_id=wire-test")
}
