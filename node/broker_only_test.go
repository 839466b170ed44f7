package node

import (
	"net"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/quorum"
)

// TestBrokerOnlyNodeJoins: a fourth node with process.roles=broker joins a
// running 3-node cluster as a Raft non-voter, registers, appears in
// Metadata and as a quorum observer, and hosts a partition that real
// clients produce to and consume from.
func TestBrokerOnlyNodeJoins(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx := testCtx(t)
	m, err := meta.ReadMeta(nodes[0].dir)
	if err != nil {
		t.Fatal(err)
	}
	b := &testNode{dir: t.TempDir(), kl: listen(t), ctrlL: listen(t)}
	if _, err := meta.Format(b.dir, meta.Meta{ClusterID: m.ClusterID, NodeID: 4, InitialControllers: m.InitialControllers}); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	config.Flags(fs)
	if err := fs.Parse([]string{"--node.id=4", "--process.roles=broker", "--log.dirs=" + b.dir,
		"--listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"--advertised.listeners=PLAINTEXT://127.0.0.1:" + port(b.kl) + ",CONTROLLER://127.0.0.1:" + port(b.ctrlL)}); err != nil {
		t.Fatal(err)
	}
	if b.cfg, err = config.Load(fs, []string{}); err != nil {
		t.Fatal(err)
	}
	if b.Node, err = Open(b.cfg, Options{KafkaListener: b.kl, ControllerListener: b.ctrlL}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.close(t) })
	if b.ctrl.IsLeader() {
		t.Fatal("the broker-only node leads the quorum")
	}

	// Every node, the new one included, lists four brokers.
	for _, tn := range append(nodes, b) {
		waitUntil(ctx, t, tn, func() bool {
			var ok bool
			tn.ctrl.View(func(im *quorum.Image) { ok = len(im.Brokers) == 4 && im.Brokers[4].Alive() })
			return ok
		})
	}
	adm := kadm.NewClient(newClient(t, b))
	md, err := adm.BrokerMetadata(ctx)
	if err != nil || len(md.Brokers) != 4 {
		t.Fatalf("metadata from the new broker: %v %+v", err, md.Brokers)
	}

	// The quorum lists it as an observer, not a voter.
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic, rt.Partitions = kafka.MetadataTopic, []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	resp, err := req.RequestWith(ctx, newClient(t, nodes[0]))
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if len(p.CurrentVoters) != 3 || len(p.Observers) != 1 || p.Observers[0].ReplicaID != 4 || p.Observers[0].LogEndOffset < 1 {
		t.Fatalf("voters %+v observers %+v", p.CurrentVoters, p.Observers)
	}

	// A partition placed on broker 4 takes records through it.
	ct := kmsg.NewPtrCreateTopicsRequest()
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "on4", -1, -1
	topic.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{4}}}
	ct.Topics = append(ct.Topics, topic)
	cresp, err := ct.RequestWith(ctx, newClient(t, nodes[1]))
	if err != nil || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create on broker 4: %v %+v", err, cresp)
	}
	waitUntil(ctx, t, b, func() bool { return b.replica("on4", 0) != nil })
	prod := newClient(t, nodes[0], kgo.DefaultProduceTopic("on4"))
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cons := newClient(t, nodes[2], kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"on4": {0: kgo.NewOffset().AtStart()}}))
	fs2 := cons.PollFetches(ctx)
	if err := fs2.Err0(); err != nil {
		t.Fatal(err)
	}
	if recs := fs2.Records(); len(recs) != 1 || string(recs[0].Value) != "hello" {
		t.Fatalf("consumed %+v", recs)
	}

	// Restarted, it joins again (a no-op for raft) and registers anew.
	kaddr, caddr := b.kl.Addr().String(), b.ctrlL.Addr().String()
	epoch := b.epoch.Load()
	b.close(t)
	kl, err := relisten(kaddr)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := relisten(caddr)
	if err != nil {
		t.Fatal(err)
	}
	if b.Node, err = Open(b.cfg, Options{KafkaListener: kl, ControllerListener: cl}); err != nil {
		t.Fatalf("restart of the broker-only node: %v", err)
	}
	if b.epoch.Load() <= epoch {
		t.Fatalf("after restart: epoch %d (was %d)", b.epoch.Load(), epoch)
	}
	// Its metadata image catches up from the quorum after the
	// registration committed at the leader: wait for the partition.
	waitUntil(ctx, t, b, func() bool { return b.replica("on4", 0) != nil })
}

// relisten binds addr again, retrying while the port is still held by the
// listener just closed.
func relisten(addr string) (net.Listener, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			return ln, err
		}
		<-time.After(20 * time.Millisecond) // pace the retries, not a synchronisation
	}
}
