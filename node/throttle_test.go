package node

import (
	"context"
	"crypto/rand"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// TestThrottledReassignment: on three nodes, a 3 MiB RF=1 partition on
// broker 1 gets a replica on broker 2 under a 512 KiB/s replication
// throttle (both rates set as dynamic broker configs through
// IncrementalAlterConfigs, the topic's throttled-replica lists as
// kafka-reassign-partitions.sh sets them). The move completes (a
// throttled follower still catches up) but no faster than the throttle
// allows, less the one second of burst each quota starts with and a
// batch; meanwhile acks=all produce to an RF=3 topic keeps answering
// promptly (in-sync replicas are never throttled). DescribeConfigs shows
// the dynamic values with their sources; deleting them restores the
// defaults; a static key and a bad value are refused with Kafka's codes.
func TestThrottledReassignment(t *testing.T) {
	c := startReplCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl := c.client()
	adm := kadm.NewClient(cl)
	const topic, rate, size = "thr", 512 << 10, 3 << 20
	ct := kmsg.NewPtrCreateTopicsRequest()
	tr := kmsg.NewCreateTopicsRequestTopic()
	tr.Topic, tr.NumPartitions, tr.ReplicationFactor = topic, -1, -1
	tr.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}}
	ct.Topics = append(ct.Topics, tr)
	if resp, err := ct.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	c.createTopic(ctx, "other", 1, nil)
	value := make([]byte, 64<<10)
	rand.Read(value) // incompressible: kgo compresses batches
	for range size / len(value) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// Refusals: a static key, a bad value, a bad resource name.
	for _, tc := range []struct {
		name, key, value string
		want             int16
	}{
		{"1", "num.io.threads", "4", kerr.InvalidRequest.Code},
		{"1", quorum.ConfigLeaderThrottleRate, "-5", kerr.InvalidConfig.Code},
		{"x", quorum.ConfigLeaderThrottleRate, "5", kerr.InvalidRequest.Code},
	} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, tc.name
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = tc.key, kmsg.StringPtr(tc.value)
		res.Configs = append(res.Configs, cfg)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.Resources[0].ErrorCode != tc.want {
			t.Errorf("alter broker %q %s=%s: %v %+v, want code %d", tc.name, tc.key, tc.value, err, resp, tc.want)
		}
	}

	// The throttle: the default for every broker, and broker 2's own.
	r := strconv.Itoa(rate)
	set := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: quorum.ConfigLeaderThrottleRate, Value: &r}, {Op: kadm.SetConfig, Name: quorum.ConfigFollowerThrottleRate, Value: &r}}
	mustAlter := func(resp kadm.AlterConfigsResponses, err error) {
		t.Helper()
		if err == nil {
			for _, x := range resp {
				if x.Err != nil {
					err = x.Err
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	mustAlter(adm.AlterBrokerConfigs(ctx, set[:1]))
	mustAlter(adm.AlterBrokerConfigs(ctx, set[1:], 2))
	lists := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: quorum.ConfigLeaderThrottledReplicas, Value: kmsg.StringPtr("0:1")},
		{Op: kadm.SetConfig, Name: quorum.ConfigFollowerThrottledReplicas, Value: kmsg.StringPtr("0:2")}}
	mustAlter(adm.AlterTopicConfigs(ctx, lists, topic))
	rcs, err := adm.DescribeBrokerConfigs(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]string{}
	for _, rc := range rcs {
		for _, e := range rc.Configs {
			if e.Key == quorum.ConfigLeaderThrottleRate || e.Key == quorum.ConfigFollowerThrottleRate {
				sources[e.Key] = *e.Value + " " + e.Source.String()
			}
		}
	}
	if sources[quorum.ConfigLeaderThrottleRate] != r+" DYNAMIC_DEFAULT_BROKER_CONFIG" || sources[quorum.ConfigFollowerThrottleRate] != r+" DYNAMIC_BROKER_CONFIG" {
		t.Errorf("broker 2's throttle configs: %v", sources)
	}

	// acks=all produce to the RF=3 topic while the move runs.
	var mu sync.Mutex
	var slowest time.Duration
	var failed int
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for pctx.Err() == nil {
			start := time.Now()
			err := cl.ProduceSync(pctx, &kgo.Record{Topic: "other", Value: []byte("x")}).FirstErr()
			mu.Lock()
			if err != nil && pctx.Err() == nil {
				failed++
			}
			slowest = max(slowest, time.Since(start))
			mu.Unlock()
		}
	})

	start := time.Now()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, []int32{1, 2})
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil || resp.Error() != nil {
		t.Fatalf("reassign: %v %v", err, resp.Error())
	}
	c.waitImage(ctx, "the move done", func(im *quorum.Image) bool {
		p := im.Topics[topic].Partitions[0]
		return !p.Reassigning() && slices.Equal(p.Replicas, []int32{1, 2}) && len(p.ISR) == 2
	})
	took := time.Since(start)
	stop()
	wg.Wait()
	// Each quota starts with a second's worth and may overdraw by one
	// fetch (at most the bytes it had left, or one 64 KiB batch).
	floor := time.Duration(float64(size-2*rate-len(value)) / rate * float64(time.Second))
	t.Logf("moved %d bytes under a %d B/s throttle in %v (floor %v); acks=all produce elsewhere: slowest %v, %d failed", size, rate, took, floor, slowest, failed)
	if took < floor {
		t.Errorf("the throttled move took %v: faster than the throttle allows (%v)", took, floor)
	}
	if failed > 0 || slowest > 3*time.Second {
		t.Errorf("acks=all produce to another topic during the throttled move: %d failed, slowest %v", failed, slowest)
	}
	// The bytes moved show in the metrics: broker 1 sent the move's bytes
	// to an adding, leader-throttled replica, broker 2 fetched them as
	// one (kafka_server_brokertopicmetrics_reassignmentbytes*,
	// sluice_replication_throttled_bytes_total).
	b1, b2 := (*metricsSource)(c.nodes[0].Node).Broker(), (*metricsSource)(c.nodes[1].Node).Broker()
	const most = size * 9 / 10
	if b1.ReassignmentBytesOut < most || b1.ThrottledLeaderBytes < most || b2.ReassignmentBytesIn < most || b2.ThrottledFollowerBytes < most {
		t.Errorf("replication bytes of a %d-byte move: broker 1 out %d (throttled %d), broker 2 in %d (throttled %d)",
			size, b1.ReassignmentBytesOut, b1.ThrottledLeaderBytes, b2.ReassignmentBytesIn, b2.ThrottledFollowerBytes)
	}

	// Deleting the throttle restores the default (no throttle).
	del := []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: quorum.ConfigLeaderThrottleRate}}
	mustAlter(adm.AlterBrokerConfigs(ctx, del))
	del = []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: quorum.ConfigFollowerThrottleRate}}
	mustAlter(adm.AlterBrokerConfigs(ctx, del, 2))
	c.waitImage(ctx, "no dynamic broker configs", func(im *quorum.Image) bool { return len(im.BrokerConfigs) == 0 })
}
