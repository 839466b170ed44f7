package kafka

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReplicaFetchOnlyOnReplicaListener (issue 14): with a replica
// listener named, a replica fetch that comes in on a client listener is
// refused for every partition, with or without an authorizer, while the
// same fetch on the replica listener and a consumer fetch on the client
// listener are served.
func TestReplicaFetchOnlyOnReplicaListener(t *testing.T) {
	fd := newFakeData("127.0.0.1:9092")
	s, err := NewServer(fd, Options{ReplicaListener: "INTERNAL"})
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(listener string, replica int32) int16 {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(s.table.lookup(req.Key()).max)
		req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = replica, replica, 7
		req.Topics = []kmsg.FetchRequestTopic{{Topic: "orders", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
		r := &request{key: req.Key(), version: req.GetVersion(), body: req, api: s.table.lookup(req.Key()), listener: listener, host: "h"}
		resp, err := r.api.handle(context.Background(), s, r)
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := resp.(*fileFetchResponse); ok {
			resp = f.FetchResponse
		}
		return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
	}
	if got := fetch("EXTERNAL", 2); got != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("replica fetch on the client listener: error %d, want TOPIC_AUTHORIZATION_FAILED", got)
	}
	if got := fetch("INTERNAL", 2); got != 0 {
		t.Fatalf("replica fetch on the replica listener: error %d, want none", got)
	}
	if got := fetch("EXTERNAL", -1); got != 0 {
		t.Fatalf("consumer fetch on the client listener: error %d, want none", got)
	}
	s.opts.ReplicaListener = ""
	if got := fetch("EXTERNAL", 2); got != 0 {
		t.Fatalf("replica fetch with no replica listener named: error %d, want none", got)
	}
}

// TestReplicaFetchNeedsTheReplicasPrincipal: with ReplicaPrincipal
// (sluice.node.principal.pattern) a replica fetch claiming replica 2 is
// served only to User:node-2: broker 3's principal, a client's, and no
// principal at all are refused for every partition, with or without an
// authorizer.
func TestReplicaFetchNeedsTheReplicasPrincipal(t *testing.T) {
	fd := newFakeData("127.0.0.1:9092")
	s, err := NewServer(fd, Options{ReplicaPrincipal: func(id int32) string { return fmt.Sprintf("User:node-%d", id) }})
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(principal string, replica int32) int16 {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(s.table.lookup(req.Key()).max)
		req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = replica, replica, 7
		req.Topics = []kmsg.FetchRequestTopic{{Topic: "orders", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
		r := &request{key: req.Key(), version: req.GetVersion(), body: req, api: s.table.lookup(req.Key()), listener: "INTERNAL", host: "h", principal: principal}
		resp, err := r.api.handle(context.Background(), s, r)
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := resp.(*fileFetchResponse); ok {
			resp = f.FetchResponse
		}
		return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
	}
	if got := fetch("User:node-2", 2); got != 0 {
		t.Fatalf("node 2's fetch as replica 2: error %d, want none", got)
	}
	for _, p := range []string{"User:node-3", "User:alice", "User:ANONYMOUS", ""} {
		if got := fetch(p, 2); got != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("%q's fetch as replica 2: error %d, want TOPIC_AUTHORIZATION_FAILED", p, got)
		}
	}
	if got := fetch("User:alice", -1); got != 0 {
		t.Fatalf("a consumer's fetch: error %d, want none", got)
	}
}
