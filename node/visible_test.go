package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
)

// TestAdminWritesVisibleWhenAnswered: an admin write is in effect on every
// live broker when it is answered (issue 14.5). 100 rounds, each through
// another broker: CreateTopics, then at once, with no retry, Metadata from
// every broker names the topic with a leader for each partition and a
// Produce to every partition's leader (every broker leads one) succeeds;
// then DeleteTopics, and every broker at once answers
// UNKNOWN_TOPIC_OR_PARTITION. Every tenth round also adds a partition and
// alters a config and checks both on every broker.
func TestAdminWritesVisibleWhenAnswered(t *testing.T) {
	nodes := startCluster(t, 3)
	// 100 rounds of creates and deletes: about 20 s on a quiet machine,
	// over testCtx's minute on a loaded one. Each request still gets its
	// own bound (TimeoutMillis, kgo's request timeout).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	seeds := make([]string, len(nodes))
	for i, tn := range nodes {
		seeds[i] = tn.KafkaAddr()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	// Learn every broker's address, so that cl.Broker(id) reaches each:
	// wait until the metadata lists all three (each registers and is
	// unfenced on its own).
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(md.Brokers) == len(nodes) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("metadata lists %d of %d brokers", len(md.Brokers), len(nodes))
		case <-tick.C:
		}
	}
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	stale := 0
	for i := range rounds {
		via := cl.Broker(i%len(nodes) + 1)
		topic := fmt.Sprintf("visible-%d", i)
		create := kmsg.NewPtrCreateTopicsRequest()
		create.TimeoutMillis = 30_000
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 3, 3
		create.Topics = append(create.Topics, ct)
		cr, err := create.RequestWith(ctx, via)
		if err != nil {
			t.Fatal(err)
		}
		if err := kerr.ErrorForCode(cr.Topics[0].ErrorCode); err != nil {
			t.Fatalf("round %d: create: %v", i, err)
		}
		for _, tn := range nodes {
			leaders, err := describe(ctx, cl.Broker(int(tn.cfg.NodeID)), topic)
			if err != nil || len(leaders) != 3 {
				stale++
				t.Errorf("round %d: broker %d right after the create answered: %v, leaders %v", i, tn.cfg.NodeID, err, leaders)
				continue
			}
			for p, leader := range leaders {
				if leader != tn.cfg.NodeID {
					continue
				}
				if err := produceTo(ctx, cl.Broker(int(leader)), topic, int32(p)); err != nil {
					stale++
					t.Errorf("round %d: produce to %s-%d at its leader %d: %v", i, topic, p, leader, err)
				}
			}
		}
		if i%10 == 0 {
			checkPartitionsAndConfigs(ctx, t, cl, nodes, topic, i)
		}
		del := kmsg.NewPtrDeleteTopicsRequest()
		del.TimeoutMillis = 30_000
		del.TopicNames = []string{topic}
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = kmsg.StringPtr(topic)
		del.Topics = append(del.Topics, dt)
		dr, err := del.RequestWith(ctx, via)
		if err != nil {
			t.Fatal(err)
		}
		if err := kerr.ErrorForCode(dr.Topics[0].ErrorCode); err != nil {
			t.Fatalf("round %d: delete: %v", i, err)
		}
		for _, tn := range nodes {
			if _, err := describe(ctx, cl.Broker(int(tn.cfg.NodeID)), topic); err != kerr.UnknownTopicOrPartition {
				stale++
				t.Errorf("round %d: broker %d right after the delete answered %v, want UNKNOWN_TOPIC_OR_PARTITION", i, tn.cfg.NodeID, err)
			}
		}
		if stale > 10 {
			t.Fatalf("%d stale answers in %d rounds", stale, i+1)
		}
	}
}

// checkPartitionsAndConfigs adds a fourth partition to topic and sets its
// retention.ms, then checks both on every broker at once.
func checkPartitionsAndConfigs(ctx context.Context, t *testing.T, cl *kgo.Client, nodes []*testNode, topic string, round int) {
	t.Helper()
	via := cl.Broker(round%len(nodes) + 1)
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.TimeoutMillis = 30_000
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = topic, 4
	cp.Topics = append(cp.Topics, cpt)
	cpr, err := cp.RequestWith(ctx, via)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(cpr.Topics[0].ErrorCode); err != nil {
		t.Fatalf("round %d: create partitions: %v", round, err)
	}
	value := fmt.Sprint(3_600_000 + round)
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ar := kmsg.NewIncrementalAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	ac := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	ac.Name, ac.Value = "retention.ms", kmsg.StringPtr(value)
	ar.Configs = append(ar.Configs, ac)
	alter.Resources = append(alter.Resources, ar)
	arr, err := alter.RequestWith(ctx, via)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(arr.Resources[0].ErrorCode); err != nil {
		t.Fatalf("round %d: alter configs: %v", round, err)
	}
	for _, tn := range nodes {
		b := cl.Broker(int(tn.cfg.NodeID))
		if leaders, err := describe(ctx, b, topic); err != nil || len(leaders) != 4 {
			t.Errorf("round %d: broker %d right after CreatePartitions: %v, leaders %v", round, tn.cfg.NodeID, err, leaders)
		}
		dc := kmsg.NewPtrDescribeConfigsRequest()
		dr := kmsg.NewDescribeConfigsRequestResource()
		dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{"retention.ms"}
		dc.Resources = append(dc.Resources, dr)
		resp, err := dc.RequestWith(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if len(resp.Resources) == 1 && len(resp.Resources[0].Configs) == 1 && resp.Resources[0].Configs[0].Value != nil {
			got = *resp.Resources[0].Configs[0].Value
		}
		if got != value {
			t.Errorf("round %d: broker %d right after IncrementalAlterConfigs: retention.ms %q, want %q", round, tn.cfg.NodeID, got, value)
		}
	}
}

// describe asks broker b alone for topic's metadata and returns each
// partition's leader, or the topic's error.
func describe(ctx context.Context, b *kgo.Broker, topic string) ([]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false
	resp, err := req.RequestWith(ctx, b)
	if err != nil {
		return nil, err
	}
	if len(resp.Topics) != 1 {
		return nil, fmt.Errorf("%d topics in the answer", len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return nil, err
	}
	leaders := make([]int32, len(resp.Topics[0].Partitions))
	for _, p := range resp.Topics[0].Partitions {
		if int(p.Partition) >= len(leaders) || p.Leader < 0 {
			return nil, fmt.Errorf("partition %d, leader %d", p.Partition, p.Leader)
		}
		leaders[p.Partition] = p.Leader
	}
	return leaders, nil
}

// produceTo writes one record to topic-partition at broker b (acks=1).
func produceTo(ctx context.Context, b *kgo.Broker, topic string, partition int32) error {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, segment.BuildBatch(1, []byte("v"))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, b)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}
