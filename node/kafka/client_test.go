package kafka

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// lockedBuffer collects a client's log lines from its goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newClient returns a real franz-go client seeded with the test server only.
func newClient(t *testing.T, ts *testServer, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(ts.addr),
		kgo.ClientID("sluice-client-test"),
		kgo.RequestRetries(0),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestRealClientApiVersions: kgo opens with ApiVersions v5, which the server
// does not speak; it must take the KIP-511 answer, retry at v3, and learn the
// table's ranges.
func TestRealClientApiVersions(t *testing.T) {
	ts := startServer(t, Options{})
	var clientLog lockedBuffer
	adm := kadm.NewClient(newClient(t, ts, kgo.WithLogger(kgo.BasicLogger(&clientLog, kgo.LogLevelDebug, nil))))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) == 0 {
		t.Fatal("no broker answered ApiVersions")
	}
	versions.Each(func(v kadm.BrokerApiVersions) {
		if v.Err != nil {
			t.Fatalf("broker %d: %v", v.NodeID, v.Err)
		}
		if v.Raw().Version != 3 {
			t.Errorf("broker %d: ApiVersions answered at v%d, want v3 after the downgrade", v.NodeID, v.Raw().Version)
		}
		for key, want := range map[int16][2]int16{18: {0, 3}, 3: {0, 12}} {
			lo, hi, ok := v.KeyVersions(key)
			if !ok || lo != want[0] || hi != want[1] {
				t.Errorf("broker %d: %s %d-%d (present %v), want %d-%d", v.NodeID, kmsg.NameForKey(key), lo, hi, ok, want[0], want[1])
			}
		}
		if _, _, ok := v.KeyVersions(kmsg.Produce.Int16()); ok {
			t.Errorf("broker %d: Produce advertised before it exists", v.NodeID)
		}
	})
	if log := clientLog.String(); !strings.Contains(log, "downgrading to version 3") {
		t.Errorf("kgo did not take the KIP-511 downgrade; its log:\n%s", log)
	}
}

func TestRealClientMetadata(t *testing.T) {
	ts := startServer(t, Options{})
	cl := newClient(t, ts)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if md.Cluster != "sluice-test-cluster" || md.Controller != 2 {
		t.Errorf("cluster %q controller %d", md.Cluster, md.Controller)
	}
	if ids := md.Brokers.NodeIDs(); !slices.Equal(ids, []int32{1, 2}) {
		t.Errorf("brokers %v, want [1 2]", ids)
	}
	if r := md.Brokers[0].Rack; r == nil || *r != "rack-a" {
		t.Errorf("broker 1 rack %v, want rack-a", r)
	}

	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := topics.Names(); !slices.Equal(names, []string{"orders"}) {
		t.Errorf("ListTopics %v, want [orders] (internal topics hidden)", names)
	}
	orders := topics["orders"]
	if orders.ID != kadm.TopicID(ordersID) || orders.Err != nil || len(orders.Partitions) != 3 {
		t.Fatalf("orders = %+v", orders)
	}
	p0, p2 := orders.Partitions[0], orders.Partitions[2]
	if p0.Leader != 1 || p0.LeaderEpoch != 7 || !slices.Equal(p0.ISR, []int32{1, 2}) || p0.Err != nil {
		t.Errorf("partition 0 = %+v", p0)
	}
	if p2.Leader != -1 || !errors.Is(p2.Err, kerr.LeaderNotAvailable) || !slices.Equal(p2.OfflineReplicas, []int32{2}) {
		t.Errorf("partition 2 = %+v", p2)
	}

	withInternal, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := withInternal["__consumer_offsets"]; !d.IsInternal || d.ID != kadm.TopicID(offsetID) {
		t.Errorf("__consumer_offsets = %+v", d)
	}

	missing, err := adm.Metadata(ctx, "nope")
	if err != nil {
		t.Fatal(err)
	}
	if d := missing.Topics["nope"]; !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("nope: err %v, want UNKNOWN_TOPIC_OR_PARTITION", d.Err)
	}

	// A raw kmsg request through the client: it picks the highest common
	// version, 12, and the broker sees the query.
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("orders")
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != 12 || len(resp.Topics) != 1 || resp.Topics[0].TopicID != ordersID {
		t.Errorf("raw metadata: v%d topics %+v", resp.Version, resp.Topics)
	}
}
