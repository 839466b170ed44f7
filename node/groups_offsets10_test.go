package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// offsetsByName are the versions kgo speaks with OffsetCommit and
// OffsetFetch capped at v9: raw requests that name topics by name go out
// as written (kgo sends a request at the highest version both sides
// speak, and v10 names topics by ID only).
func offsetsByName() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	v.SetMaxKeyVersion(kmsg.OffsetFetch.Int16(), 9)
	return v
}

// TestOffsetsV10: OffsetCommit and OffsetFetch v10 (Kafka 4.2) name
// topics by ID. A commit by ID is read back by ID and by name (kadm, at
// the version kgo negotiates, and v9 by name); an unknown ID answers
// UNKNOWN_TOPIC_ID for its partitions, the others of the request still
// committed; a fetch of every offset gives each topic's ID.
func TestOffsetsV10(t *testing.T) {
	tn := startNode(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	ctx := testCtx(t)
	cl := newClient(t, tn)
	adm := kadm.NewClient(cl)
	created, err := adm.CreateTopic(ctx, 2, 1, nil, "ids")
	if err != nil {
		t.Fatal(err)
	}
	id := created.ID
	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		if k, ok := v.KeyMaxVersion(kmsg.OffsetCommit.Int16()); ok && k != 10 {
			t.Errorf("OffsetCommit max version %d, want 10", k)
		}
		if k, ok := v.KeyMaxVersion(kmsg.OffsetFetch.Int16()); ok && k != 10 {
			t.Errorf("OffsetFetch max version %d, want 10", k)
		}
	}
	unknown := [16]byte{1, 2, 3}

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 10, "g10", -1
	for _, tid := range [][16]byte{id, unknown} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = tid
		for p := range int32(2) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, int64(10+p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		commit.Topics = append(commit.Topics, rt)
	}
	// kgo fills in a topic's name from its ID; ask the node directly
	// so that the request goes out as written.
	br := cl.Broker(int(tn.cfg.NodeID))
	var cresp *kmsg.OffsetCommitResponse
	waitFor(ctx, t, "the group's coordinator loaded (the offsets topic is created on first use)", func() bool {
		adm.FindGroupCoordinators(ctx, "g10")
		cresp, err = commit.RequestWith(ctx, br)
		if err != nil {
			t.Fatal(err)
		}
		switch cresp.Topics[0].Partitions[0].ErrorCode {
		case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code:
			return false
		}
		return true
	})
	for i, rt := range cresp.Topics {
		want := int16(0)
		if i == 1 {
			want = kerr.UnknownTopicID.Code
		}
		if rt.TopicID != commit.Topics[i].TopicID || len(rt.Partitions) != 2 {
			t.Errorf("commit answer topic %d: %+v", i, rt)
		}
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != want {
				t.Errorf("commit topic %d partition %d: %s, want %s", i, rp.Partition, kerr.ErrorForCode(rp.ErrorCode), kerr.ErrorForCode(want))
			}
		}
	}

	// kgo sends the highest version both sides speak: a client capped at
	// v9 asks by name.
	br9 := newClient(t, tn, kgo.MaxVersions(offsetsByName())).Broker(int(tn.cfg.NodeID))
	fetch := func(version int16, topics []kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroup {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.Topics = "g10", topics
		req.Groups = append(req.Groups, g)
		to := br
		if version < 10 {
			to = br9
		}
		resp, err := req.RequestWith(ctx, to)
		if err == nil && resp.Version != version {
			t.Fatalf("OffsetFetch answered at v%d, want v%d", resp.Version, version)
		}
		if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("OffsetFetch v%d: %v %+v", version, err, resp)
		}
		return resp.Groups[0]
	}
	byID := kmsg.NewOffsetFetchRequestGroupTopic()
	byID.TopicID, byID.Partitions = id, []int32{0, 1}
	bad := kmsg.NewOffsetFetchRequestGroupTopic()
	bad.TopicID, bad.Partitions = unknown, []int32{0}
	g := fetch(10, []kmsg.OffsetFetchRequestGroupTopic{bad, byID})
	if len(g.Topics) != 2 || g.Topics[0].TopicID != unknown || g.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code ||
		g.Topics[1].TopicID != id || g.Topics[1].Partitions[0].Offset != 10 || g.Topics[1].Partitions[1].Offset != 11 {
		t.Errorf("OffsetFetch v10 by ID: %+v", g.Topics)
	}
	g = fetch(10, nil)
	if len(g.Topics) != 1 || g.Topics[0].TopicID != id || len(g.Topics[0].Partitions) != 2 {
		t.Errorf("OffsetFetch v10 of every offset: %+v", g.Topics)
	}
	byName := kmsg.NewOffsetFetchRequestGroupTopic()
	byName.Topic, byName.Partitions = "ids", []int32{0, 1}
	g = fetch(9, []kmsg.OffsetFetchRequestGroupTopic{byName})
	if len(g.Topics) != 1 || g.Topics[0].Topic != "ids" || g.Topics[0].Partitions[1].Offset != 11 {
		t.Errorf("OffsetFetch v9 by name: %+v", g.Topics)
	}
	offs, err := adm.FetchOffsets(ctx, "g10")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("ids", 1); !ok || o.At != 11 {
		t.Errorf("kadm FetchOffsets: %+v", offs)
	}
}
