package kafka

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func createTopic(name string, parts int32, rf int16) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, parts, rf
	return t
}

func assigned(name string, replicas ...[]int32) kmsg.CreateTopicsRequestTopic {
	t := createTopic(name, -1, -1)
	for i, r := range replicas {
		t.ReplicaAssignment = append(t.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: int32(i), Replicas: r})
	}
	return t
}

// TestCreateTopicsValidation: what the request alone shows to be wrong is
// refused per topic with Kafka's codes, the rest reaches the TopicAdmin once.
func TestCreateTopicsValidation(t *testing.T) {
	ts, admin := startAdminServer(t, Options{})
	c := dial(t, ts.addr)
	nullConfig := createTopic("null-config", 1, 1)
	nullConfig.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: nil}}
	withConfig := createTopic("with-config", 2, 1)
	withConfig.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}
	swapped := assigned("swapped", []int32{1}, []int32{2})
	swapped.ReplicaAssignment[0].Partition, swapped.ReplicaAssignment[1].Partition = 1, 0
	both := assigned("both", []int32{1})
	both.NumPartitions = 3

	topics := []kmsg.CreateTopicsRequestTopic{
		createTopic("ok", 3, 2),
		createTopic("dup", 1, 1),
		createTopic("bad name!", 1, 1),
		createTopic("dup", 2, 1),
		createTopic("..", 1, 1),
		createTopic("zero-parts", 0, 1),
		createTopic("zero-rf", 1, 0),
		createTopic("defaults", -1, -1),
		both,
		swapped,
		assigned("empty-replicas", []int32{}),
		assigned("twice", []int32{1, 1}),
		assigned("ragged", []int32{1, 2}, []int32{1}),
		assigned("manual", []int32{2, 1}, []int32{1, 2}),
		nullConfig,
		withConfig,
		createTopic("orders", 1, 1), // exists: the TopicAdmin says so
		createTopic("too-many-replicas", 1, 3),
	}
	want := []struct {
		name string
		code int16
	}{
		{"ok", 0},
		{"dup", kerr.InvalidRequest.Code},
		{"bad name!", kerr.InvalidTopicException.Code},
		{"..", kerr.InvalidTopicException.Code},
		{"zero-parts", kerr.InvalidPartitions.Code},
		{"zero-rf", kerr.InvalidReplicationFactor.Code},
		{"defaults", 0},
		{"both", kerr.InvalidRequest.Code},
		{"swapped", kerr.InvalidReplicaAssignment.Code},
		{"empty-replicas", kerr.InvalidReplicaAssignment.Code},
		{"twice", kerr.InvalidReplicaAssignment.Code},
		{"ragged", kerr.InvalidReplicaAssignment.Code},
		{"manual", 0},
		{"null-config", kerr.InvalidConfig.Code},
		{"with-config", 0},
		{"orders", kerr.TopicAlreadyExists.Code},
		{"too-many-replicas", kerr.InvalidReplicationFactor.Code},
	}
	for _, v := range []int16{0, 1, 4, 5, 7} {
		admin.mu.Lock()
		admin.created = nil
		admin.mu.Unlock()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = v
		req.ValidateOnly = v >= 1 // v0 really creates; later versions only validate
		req.TimeoutMillis = 5000
		req.Topics = topics
		resp := c.roundTrip(req).(*kmsg.CreateTopicsResponse)
		if len(resp.Topics) != len(want) {
			t.Fatalf("v%d: %d results, want %d", v, len(resp.Topics), len(want))
		}
		for i, w := range want {
			got := resp.Topics[i]
			code := w.code
			if v > 0 && w.name != "orders" && code == kerr.TopicAlreadyExists.Code {
				code = 0
			}
			if v > 0 && code == 0 && slices.Contains([]string{"ok", "defaults", "manual", "with-config"}, w.name) {
				// Created by the v0 round: now they exist.
				code = kerr.TopicAlreadyExists.Code
			}
			if got.Topic != w.name || got.ErrorCode != code {
				t.Errorf("v%d: result %d = %s code %d, want %s code %d", v, i, got.Topic, got.ErrorCode, w.name, code)
			}
			if v >= 1 && code != 0 && got.ErrorMessage == nil {
				t.Errorf("v%d: %s: error without a message", v, w.name)
			}
		}
		admin.mu.Lock()
		calls := admin.created
		admin.mu.Unlock()
		var passed []string
		for _, nt := range calls[0] {
			passed = append(passed, nt.Name)
		}
		if len(calls) != 1 || !slices.Equal(passed, []string{"ok", "defaults", "manual", "with-config", "orders", "too-many-replicas"}) {
			t.Errorf("v%d: admin got %d calls, topics %v", v, len(calls), passed)
		}
		if cfg := calls[0][3].Configs; cfg["retention.ms"] != "1000" {
			t.Errorf("v%d: configs %v", v, cfg)
		}
		if a := calls[0][2].Assignment; !slices.Equal(a[0], []int32{2, 1}) || len(a) != 2 {
			t.Errorf("v%d: assignment %v", v, a)
		}
	}

	// v7 returns the new topic's ID, v5+ its shape.
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.Topics = []kmsg.CreateTopicsRequestTopic{createTopic("fresh", 3, -1)}
	resp := c.roundTrip(req).(*kmsg.CreateTopicsResponse)
	if got := resp.Topics[0]; got.ErrorCode != 0 || got.TopicID == ([16]byte{}) || got.NumPartitions != 3 || got.ReplicationFactor != 1 {
		t.Errorf("v7 fresh: %+v", got)
	}
}

func TestDeleteTopicsValidation(t *testing.T) {
	ts, admin := startAdminServer(t, Options{})
	c := dial(t, ts.addr)

	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	name := func(s string) kmsg.DeleteTopicsRequestTopic {
		return kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(s)}
	}
	id := func(i TopicID) kmsg.DeleteTopicsRequestTopic { return kmsg.DeleteTopicsRequestTopic{TopicID: i} }
	req.Topics = []kmsg.DeleteTopicsRequestTopic{
		id(offsetID),
		name("nope"),
		{Topic: kmsg.StringPtr("orders"), TopicID: ordersID},
		{},
		name("nope"),
		id(TopicID{7}),
	}
	resp := c.roundTrip(req).(*kmsg.DeleteTopicsResponse)
	want := []struct {
		name string
		code int16
	}{
		{"__consumer_offsets", 0},
		{"nope", kerr.InvalidRequest.Code}, // given twice
		{"orders", kerr.InvalidRequest.Code},
		{"", kerr.InvalidRequest.Code},
		{"", kerr.UnknownTopicID.Code},
	}
	if len(resp.Topics) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(resp.Topics), len(want), resp.Topics)
	}
	for i, w := range want {
		got := resp.Topics[i]
		if derefOr(got.Topic, "") != w.name || got.ErrorCode != w.code {
			t.Errorf("result %d = %v code %d, want %q code %d", i, derefOr(got.Topic, "<null>"), got.ErrorCode, w.name, w.code)
		}
	}
	if resp.Topics[0].TopicID != offsetID || resp.Topics[4].Topic != nil {
		t.Errorf("by id: %+v", resp.Topics)
	}

	// v0-5 name topics only, and names are never null in the answer.
	for _, v := range []int16{0, 5} {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = v
		req.TopicNames = []string{"orders", "gone"}
		resp := c.roundTrip(req).(*kmsg.DeleteTopicsResponse)
		wantOrders := int16(0)
		if v > 0 {
			wantOrders = kerr.UnknownTopicOrPartition.Code
		}
		if len(resp.Topics) != 2 || *resp.Topics[0].Topic != "orders" || resp.Topics[0].ErrorCode != wantOrders ||
			*resp.Topics[1].Topic != "gone" || resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("v%d: %+v", v, resp.Topics)
		}
	}
	admin.mu.Lock()
	defer admin.mu.Unlock()
	if len(admin.deleted) != 3 || len(admin.deleted[0]) != 2 {
		t.Errorf("admin calls %v", admin.deleted)
	}
}

// TestAdminAPIsOnlyWithTopicAdmin: without the capability the APIs are
// neither advertised nor answered.
func TestAdminAPIsOnlyWithTopicAdmin(t *testing.T) {
	ts, _ := startAdminServer(t, Options{})
	c := dial(t, ts.addr)
	resp := c.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	var keys []int16
	for _, k := range resp.ApiKeys {
		keys = append(keys, k.ApiKey)
	}
	if !slices.Equal(keys, []int16{3, 10, 17, 18, 19, 20, 36, 60, 75}) {
		t.Errorf("with TopicAdmin: keys %v", keys)
	}

	plain := startServer(t, Options{})
	c = dial(t, plain.addr)
	c.send(kmsg.NewPtrCreateTopicsRequest())
	c.expectClosed()
	plain.logs.waitFor(t, "closing connection", "unknown api key 19")
}

// TestRealClientCreateDeleteTopics drives the admin APIs with kadm.
func TestRealClientCreateDeleteTopics(t *testing.T) {
	ts, _ := startAdminServer(t, Options{})
	cl := newClient(t, ts)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	created, err := adm.CreateTopic(ctx, 4, 2, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, "events")
	if err != nil || created.Err != nil {
		t.Fatalf("create: %v %v", err, created.Err)
	}
	if created.ID == (kadm.TopicID{}) || created.NumPartitions != 4 || created.ReplicationFactor != 2 {
		t.Errorf("created %+v", created)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "events"); !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Errorf("create again: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "no/slash"); !errors.Is(err, kerr.InvalidTopicException) {
		t.Errorf("bad name: %v, want INVALID_TOPIC_EXCEPTION", err)
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := topics["events"]; len(d.Partitions) != 4 || d.ID != created.ID {
		t.Errorf("listed events %+v", d)
	}

	deleted, err := adm.DeleteTopics(ctx, "events", "never-was")
	if err != nil {
		t.Fatal(err)
	}
	if r := deleted["events"]; r.Err != nil {
		t.Errorf("delete events: %v", r.Err)
	}
	if r := deleted["never-was"]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("delete never-was: %v", r.Err)
	}
	// Not kadm.ListTopics: kadm answers Metadata from kgo's cache
	// (MetadataMinAge, 5s by default), which still holds events.
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		if derefOr(rt.Topic, "") == "events" {
			t.Errorf("events still listed after delete")
		}
	}
}
