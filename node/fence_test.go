package node

import (
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// forgeFetch sends one Fetch for topic/partition at version v to addr on a
// connection of its own, as anyone on the network can: replica id and
// broker epoch are what the sender claims (v15+ carries them in
// ReplicaState). It returns the partition's answer.
func forgeFetch(t testing.TB, addr string, v int16, replica int32, brokerEpoch int64, topic string, topicID [16]byte, partition int32, offset int64, leaderEpoch int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v)
	req.ReplicaID = replica
	if v >= 15 {
		req.ReplicaID = -1
		req.ReplicaState.ID, req.ReplicaState.Epoch = replica, brokerEpoch
	}
	req.MaxBytes, req.SessionEpoch = 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = partition, offset, leaderEpoch, 1<<20
	rp.LastFetchedEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if _, err := roundTrip(c, req, resp, 10*time.Second, nil); err != nil {
		t.Fatalf("forged fetch v%d: %v", v, err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("forged fetch v%d: %+v", v, resp)
	}
	return resp.Topics[0].Partitions[0]
}

// TestNewerLeaderEpochDoesNotFenceLeader: a Fetch claiming a leader epoch
// newer than the leader's, from a broker that is not even a replica, is
// answered UNKNOWN_LEADER_EPOCH and nothing else; the leader keeps
// serving (issue 14: one such packet fenced it until a restart).
func TestNewerLeaderEpochDoesNotFenceLeader(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	cl := newClient(t, tn)
	createTopic(ctx, t, cl, "t", 1)
	r := tn.replica("t", 0)
	r.mu.Lock()
	epoch := r.part.LeaderEpoch()
	r.mu.Unlock()
	for _, replica := range []int32{999, 1} {
		p := forgeFetch(t, tn.KafkaAddr(), 12, replica, -1, "t", [16]byte{}, 0, 0, epoch+1)
		if p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
			t.Fatalf("fetch from %d at leader epoch %d: error %d, want UNKNOWN_LEADER_EPOCH", replica, epoch+1, p.ErrorCode)
		}
	}
	if pr := produceRaw(ctx, t, cl, "t", 0, -1, segment.BuildBatch(1, []byte("after"))); pr.ErrorCode != 0 {
		t.Fatalf("produce after the forged fetch: %v", kerr.ErrorForCode(pr.ErrorCode))
	}
	r.mu.Lock()
	st := r.part.Status()
	r.mu.Unlock()
	if st.Fenced || st.HW != 1 {
		t.Fatalf("leader after the forged fetch: fenced=%v hw=%d", st.Fenced, st.HW)
	}
}

// TestFetchByTopicID: Fetch v13+ names topics by ID; an unknown ID is
// UNKNOWN_TOPIC_ID, a known one reads as by name.
func TestFetchByTopicID(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	cl := newClient(t, tn)
	createTopic(ctx, t, cl, "byid", 1)
	if pr := produceRaw(ctx, t, cl, "byid", 0, -1, segment.BuildBatch(1, []byte("a"), []byte("b"))); pr.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(pr.ErrorCode))
	}
	id := tn.replica("byid", 0).topicID
	for _, v := range []int16{13, 15} {
		p := forgeFetch(t, tn.KafkaAddr(), v, -1, -1, "", id, 0, 0, -1)
		if p.ErrorCode != 0 || p.HighWatermark != 2 || len(p.RecordBatches) == 0 {
			t.Fatalf("v%d by id: error %v hw %d, %d bytes", v, kerr.ErrorForCode(p.ErrorCode), p.HighWatermark, len(p.RecordBatches))
		}
		if p := forgeFetch(t, tn.KafkaAddr(), v, -1, -1, "", quorum.NewUUID(), 0, 0, -1); p.ErrorCode != kerr.UnknownTopicID.Code {
			t.Fatalf("v%d by an unknown id: %v", v, kerr.ErrorForCode(p.ErrorCode))
		}
	}
}
