package node

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestACLsGroups: the group APIs under Kafka's StandardAuthorizer. alice,
// with READ on the topic prefix a- and no group ACL, cannot find a
// group's coordinator, fetch, describe or delete admin's group, nor see
// it listed. Granted READ on group ga she consumes a-x as a member of ga
// and commits; her commit of b-x (no READ) is refused per partition
// while a-x's goes in; ListGroups shows her ga and not admin's group.
func TestACLsGroups(t *testing.T) {
	tn := startNodeWith(t, t.TempDir(), Options{}, append(append([]string{
		"listeners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners=SASL_PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT",
		"inter.broker.listener.name=SASL_PLAINTEXT",
	}, aclSettings...), groupSettings...)...)
	ctx := testCtx(t)
	admin := newClient(t, tn, plainAuth("admin", "admin-secret"))
	adm := kadm.NewClient(admin)
	for _, topic := range []string{"a-x", "b-x"} {
		createTopic(ctx, t, admin, topic, 1)
		if err := admin.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("admin produce to %s: %v", topic, err)
		}
	}
	// admin's group: a standalone commit (this also creates the offsets topic).
	waitFor(ctx, t, "admin commits for g-admin", func() bool {
		var o kadm.Offsets
		o.Add(kadm.Offset{Topic: "a-x", Partition: 0, At: 1, LeaderEpoch: -1})
		res, err := adm.CommitOffsets(ctx, "g-admin", o)
		return err == nil && res.Error() == nil
	})
	grant := kadm.NewACLs().Topics("a-").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:alice").Operations(kadm.OpRead)
	if res, err := adm.CreateACLs(ctx, grant); err != nil || res[0].Err != nil {
		t.Fatalf("grant alice READ on a-*: %+v %v", res, err)
	}

	alice := newClient(t, tn, plainAuth("alice", "alice-secret"), kgo.RequestRetries(0), kgo.RetryTimeout(0))
	// Straight to the node: kgo would route group requests through
	// FindCoordinator, which alice may not use either.
	seed := alice.SeedBrokers()[0]
	groupErr := func(what string, code int16) {
		t.Helper()
		if code != kerr.GroupAuthorizationFailed.Code {
			t.Fatalf("alice %s: %v, want GROUP_AUTHORIZATION_FAILED", what, kerr.ErrorForCode(code))
		}
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"g-admin"}
	if resp, err := reqTo[*kmsg.FindCoordinatorResponse](ctx, seed, fc); err != nil || len(resp.Coordinators) != 1 {
		t.Fatalf("alice's FindCoordinator: %+v %v", resp, err)
	} else {
		groupErr("finds g-admin's coordinator", resp.Coordinators[0].ErrorCode)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	og := kmsg.NewOffsetFetchRequestGroup()
	og.Group = "g-admin"
	of.Groups = append(of.Groups, og)
	if resp, err := reqTo[*kmsg.OffsetFetchResponse](ctx, seed, of); err != nil || len(resp.Groups) != 1 {
		t.Fatalf("alice's OffsetFetch: %+v %v", resp, err)
	} else {
		groupErr("fetches g-admin's offsets", resp.Groups[0].ErrorCode)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g-admin"}
	if resp, err := reqTo[*kmsg.DescribeGroupsResponse](ctx, seed, dg); err != nil || len(resp.Groups) != 1 {
		t.Fatalf("alice's DescribeGroups: %+v %v", resp, err)
	} else {
		groupErr("describes g-admin", resp.Groups[0].ErrorCode)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g-admin"}
	if resp, err := reqTo[*kmsg.DeleteGroupsResponse](ctx, seed, del); err != nil || len(resp.Groups) != 1 {
		t.Fatalf("alice's DeleteGroups: %+v %v", resp, err)
	} else {
		groupErr("deletes g-admin", resp.Groups[0].ErrorCode)
	}
	listed := func(cl *kgo.Client) []string {
		t.Helper()
		resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("ListGroups: %+v %v", resp, err)
		}
		var ids []string
		for _, g := range resp.Groups {
			ids = append(ids, g.Group)
		}
		slices.Sort(ids)
		return ids
	}
	if ids := listed(alice); len(ids) != 0 {
		t.Fatalf("alice lists %v without group ACLs, want none", ids)
	}
	if ids := listed(admin); !slices.Contains(ids, "g-admin") {
		t.Fatalf("admin lists %v, want g-admin", ids)
	}

	// READ on group ga: alice consumes a-x as its member and commits.
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Groups("ga").Allow("User:alice").Operations(kadm.OpRead)); err != nil || res[0].Err != nil {
		t.Fatalf("grant alice READ on group ga: %+v %v", res, err)
	}
	member := newClient(t, tn, plainAuth("alice", "alice-secret"), kgo.ConsumerGroup("ga"), kgo.ConsumeTopics("a-x"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	pollCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got int
	for got == 0 {
		fs := member.PollFetches(pollCtx)
		if err := pollCtx.Err(); err != nil {
			t.Fatalf("alice's group member consumed nothing: %v", err)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("alice's group member: %v", e.Err)
		}
		got += len(fs.Records())
		if err := member.CommitUncommittedOffsets(pollCtx); err != nil {
			t.Fatalf("alice's commit: %v", err)
		}
	}
	aliceAdm := kadm.NewClient(alice)
	fetched, err := aliceAdm.FetchOffsets(ctx, "ga")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("a-x", 0); !ok || o.At != 1 || o.Err != nil {
		t.Fatalf("alice reads ga's a-x offset: %+v %v, want 1", o, ok)
	}
	// A standalone commit to ga: a-x goes in, b-x (no READ) is refused.
	// (Raw: kadm resolves topic ids through Metadata first, which fails
	// for alice as a whole once one topic is hidden from her.)
	member.Close() // leave ga: a non-member may commit to an Empty group
	waitFor(ctx, t, "ga empty", func() bool {
		d, err := adm.DescribeGroups(ctx, "ga")
		return err == nil && d["ga"].State == "Empty"
	})
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "ga", -1
	for _, topic := range []string{"a-x", "b-x"} {
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic = topic
		op := kmsg.NewOffsetCommitRequestTopicPartition()
		op.Partition, op.Offset, op.LeaderEpoch = 0, 1, -1
		ot.Partitions = append(ot.Partitions, op)
		oc.Topics = append(oc.Topics, ot)
	}
	// By name: a client that speaks OffsetCommit up to v9 (v10 names
	// topics by ID, which alice cannot look up; TestOffsetsV10 has it).
	ocr, err := reqTo[*kmsg.OffsetCommitResponse](ctx, newClient(t, tn, plainAuth("alice", "alice-secret"), kgo.RequestRetries(0),
		kgo.RetryTimeout(0), kgo.MaxVersions(offsetsByName())).SeedBrokers()[0], oc)
	if err != nil || len(ocr.Topics) != 2 {
		t.Fatalf("alice's OffsetCommit: %+v %v", ocr, err)
	}
	for _, rt := range ocr.Topics {
		want := int16(0)
		if rt.Topic == "b-x" {
			want = kerr.TopicAuthorizationFailed.Code
		}
		if code := rt.Partitions[0].ErrorCode; code != want {
			t.Fatalf("alice commits ga's %s: %v, want %v", rt.Topic, kerr.ErrorForCode(code), kerr.ErrorForCode(want))
		}
	}
	if ids := listed(alice); !slices.Equal(ids, []string{"ga"}) {
		t.Fatalf("alice lists %v with READ on ga, want [ga]", ids)
	}
}

// reqTo sends req to broker b and returns its response as R.
func reqTo[R kmsg.Response](ctx context.Context, b *kgo.Broker, req kmsg.Request) (R, error) {
	var zero R
	resp, err := b.Request(ctx, req)
	if err != nil {
		return zero, err
	}
	return resp.(R), nil
}
