package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestNodePrincipalPattern: three nodes whose replica fetchers
// authenticate as node-<id> (SCRAM) with sluice.node.principal.pattern
// set replicate (acks=all, min.insync.replicas=3); a client holding
// node 2's credentials that fetches as another replica is refused for
// every partition.
func TestNodePrincipalPattern(t *testing.T) {
	nodes := startClusterWith(t, 3, "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"SLUICE_LISTENER_NAME_SASL_PLAINTEXT_SCRAM_SHA_512_SASL_JAAS_CONFIG=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"node-{id}\" password=\"node-secret\";",
		"bootstrap.scram=SCRAM-SHA-512=[name=node-1,password=node-secret],SCRAM-SHA-512=[name=node-2,password=node-secret],SCRAM-SHA-512=[name=node-3,password=node-secret]",
		"sluice.node.principal.pattern=User:node-{{id}}",
	)
	ctx := testCtx(t)
	as := func(i int, user string, opts ...kgo.Opt) *kgo.Client {
		return newClient(t, nodes[i], append([]kgo.Opt{scram512(user, "node-secret")}, opts...)...)
	}
	adm := kadm.NewClient(as(0, "node-1"))
	three := "3"
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &three}, "ids"); err != nil {
		t.Fatal(err)
	}
	produceConsume(ctx, t, as(1, "node-2", kgo.RequiredAcks(kgo.AllISRAcks())), as(2, "node-3"), "ids", 100)

	md, err := adm.Metadata(ctx, "ids")
	if err != nil {
		t.Fatal(err)
	}
	p := md.Topics["ids"].Partitions[0]
	other := int32(1) // a follower that is not node 2
	for other == p.Leader || other == 2 {
		other++
	}
	cl := as(int(p.Leader-1), "node-2")
	for _, claim := range []int32{other, 2} {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = claim, claim, -1
		req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
		req.Topics = []kmsg.FetchRequestTopic{{Topic: "ids", TopicID: md.Topics["ids"].ID, Partitions: []kmsg.FetchRequestTopicPartition{
			{Partition: 0, FetchOffset: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}}
		resp, err := req.RequestWith(ctx, cl.Broker(int(p.Leader)))
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Topics[0].Partitions[0].ErrorCode
		if claim == other && got != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("node 2's credentials fetching as replica %d: error %d, want TOPIC_AUTHORIZATION_FAILED", claim, got)
		}
		if claim == 2 && got == kerr.TopicAuthorizationFailed.Code {
			t.Fatal("node 2's credentials fetching as replica 2 were refused")
		}
	}
}
