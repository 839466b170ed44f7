package node

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTwoNamedListeners: a broker with two PLAINTEXT listeners under other
// names (INTERNAL, the inter-broker one, and EXTERNAL, advertised under
// another host name, as a container publishes it) tells each client the
// addresses of the listener it connected to, and serves produce and fetch
// on both.
func TestTwoNamedListeners(t *testing.T) {
	ext := listen(t)
	extPort := port(ext)
	ext.Close() // the node binds it (a small race with other processes)
	tn := startNodeWith(t, t.TempDir(), Options{},
		"listeners=INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:"+extPort+",CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"advertised.listeners=INTERNAL://127.0.0.1:$KAFKA_PORT,EXTERNAL://localhost:"+extPort+",CONTROLLER://127.0.0.1:$CONTROLLER_PORT",
		"inter.broker.listener.name=INTERNAL")
	internal := tn.KafkaAddr()
	ctx := testCtx(t)
	if _, err := kadm.NewClient(newClient(t, tn)).CreateTopic(ctx, 1, 1, nil, "both"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ seed, wantHost, wantPort string }{
		{internal, "127.0.0.1", port(tn.kl)},
		{"127.0.0.1:" + extPort, "localhost", extPort},
	} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(tc.seed))
		if err != nil {
			t.Fatal(err)
		}
		md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(md.Brokers) != 1 || md.Brokers[0].Host != tc.wantHost || fmt.Sprint(md.Brokers[0].Port) != tc.wantPort {
			t.Fatalf("metadata through %s: brokers %+v, want %s:%s", tc.seed, md.Brokers, tc.wantHost, tc.wantPort)
		}
		prod, err := kgo.NewClient(kgo.SeedBrokers(tc.seed), kgo.DefaultProduceTopic("both"), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			t.Fatal(err)
		}
		err = prod.ProduceSync(ctx, &kgo.Record{Value: []byte("via " + tc.seed)}).FirstErr()
		prod.Close()
		if err != nil {
			t.Fatalf("produce through %s: %v", tc.seed, err)
		}
	}
	cons := newClient(t, tn, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"both": {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < 2 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if got[0] != "via "+internal || got[1] != "via 127.0.0.1:"+extPort {
		t.Fatalf("records %q", got)
	}

	// A replica fetch (a follower's, claiming broker 1 at its registered
	// epoch) is taken only on the inter-broker listener (issue 14): on
	// EXTERNAL it is refused as unauthorized; on INTERNAL it gets past
	// that check (and is then refused as no assigned replica's). kgo
	// sends the newest version both sides know: topic id and ReplicaState.
	tds, err := kadm.NewClient(newClient(t, tn)).ListTopics(ctx, "both")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		seed string
		want int16
	}{
		{"127.0.0.1:" + extPort, kerr.TopicAuthorizationFailed.Code},
		{internal, kerr.NotLeaderForPartition.Code},
	} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(tc.seed))
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.ReplicaState.ID, req.MaxWaitMillis = 1, 1, 0
		req.Topics = []kmsg.FetchRequestTopic{{Topic: "both", TopicID: tds["both"].ID, Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
		resp, err := req.RequestWith(ctx, cl)
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Fatalf("replica fetch through %s: error %d, want %d", tc.seed, got, tc.want)
		}
	}
}
