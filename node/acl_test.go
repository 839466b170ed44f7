package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// aclJAAS are the PLAIN users of the authorization tests: the broker
// (inter-broker, a super user), admin (a super user), alice and bob.
const aclJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`

// aclSettings turn on Kafka's StandardAuthorizer on a SASL_PLAINTEXT
// listener with PLAIN users.
var aclSettings = []string{
	"sasl.enabled.mechanisms=PLAIN",
	"sasl.mechanism.inter.broker.protocol=PLAIN",
	"SLUICE_LISTENER_NAME_SASL_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG=" + aclJAAS,
	"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"super.users=User:admin;User:broker",
	"allow.everyone.if.no.acl.found=false",
}

// startACLNode starts one node whose only Kafka listener is
// SASL_PLAINTEXT, with authorization on.
func startACLNode(t *testing.T) *testNode {
	t.Helper()
	return startNodeWith(t, t.TempDir(), Options{}, append([]string{
		"listeners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners=SASL_PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT",
		"inter.broker.listener.name=SASL_PLAINTEXT",
	}, aclSettings...)...)
}

// consumeFirst reads topic's partition 0 from the start until a record
// or an error arrives, and returns the record's value or the error.
func consumeFirst(ctx context.Context, t *testing.T, tn *testNode, user, topic string) (string, error) {
	t.Helper()
	cl := newClient(t, tn, plainAuth(user, user+"-secret"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("nothing consumed from %s: %w", topic, err)
		}
		for _, e := range fs.Errors() {
			return "", e.Err
		}
		if recs := fs.Records(); len(recs) > 0 {
			return string(recs[0].Value), nil
		}
	}
}

// allTopics returns the topic names of an all-topics Metadata request.
func allTopics(ctx context.Context, t *testing.T, cl *kgo.Client) []string {
	t.Helper()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range resp.Topics {
		if tp.ErrorCode != 0 {
			t.Fatalf("all-topics metadata answers %v with %v", tp.Topic, kerr.ErrorForCode(tp.ErrorCode))
		}
		names = append(names, *tp.Topic)
	}
	slices.Sort(names)
	return names
}

// TestACLs: with StandardAuthorizer and allow.everyone.if.no.acl.found
// false, real clients as alice are refused everything until ACLs allow
// it: READ on the prefix a- lets her consume a-x and not b-x, and hides
// b-x from her Metadata; her produce without WRITE answers
// TOPIC_AUTHORIZATION_FAILED and appends nothing; a DENY beats the
// ALLOW; topic admin, configs and the ACL APIs are refused; removing the
// DENY restores access at once. Super users (admin) are never refused.
func TestACLs(t *testing.T) {
	tn := startACLNode(t)
	ctx := testCtx(t)
	admin := newClient(t, tn, plainAuth("admin", "admin-secret"))
	adm := kadm.NewClient(admin)
	for _, topic := range []string{"a-x", "b-x"} {
		createTopic(ctx, t, admin, topic, 1)
		if err := admin.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("from admin to " + topic)}).FirstErr(); err != nil {
			t.Fatalf("admin produce to %s: %v", topic, err)
		}
	}

	alice := newClient(t, tn, plainAuth("alice", "alice-secret"), kgo.RequestRetries(0), kgo.RetryTimeout(0))
	aliceAdm := kadm.NewClient(alice)
	// No ACLs: nothing.
	if _, err := consumeFirst(ctx, t, tn, "alice", "a-x"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice consumes a-x without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if names := allTopics(ctx, t, alice); len(names) != 0 {
		t.Fatalf("alice's all-topics metadata without ACLs: %v, want no topics", names)
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("a-x")
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(ctx, alice); err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice's metadata for a-x: %+v %v, want TOPIC_AUTHORIZATION_FAILED", resp, err)
	}
	// Idempotent producing needs WRITE somewhere: InitProducerId is refused.
	idem := newClient(t, tn, plainAuth("alice", "alice-secret"), kgo.DefaultProduceTopic("a-x"), kgo.RecordRetries(1))
	if err := idem.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.ClusterAuthorizationFailed) && !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice's idempotent produce without ACLs: %v", err)
	}
	// Topic admin, configs, cluster APIs.
	if res, err := aliceAdm.CreateTopic(ctx, 1, 1, nil, "a-new"); err == nil || !errors.Is(res.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice creates a-new: %v %v", res.Err, err)
	}
	if res, err := aliceAdm.DeleteTopic(ctx, "b-x"); err == nil || !errors.Is(res.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice deletes b-x: %v %v", res.Err, err)
	}
	if rcs, err := aliceAdm.DescribeTopicConfigs(ctx, "a-x"); !errors.Is(err, kerr.TopicAuthorizationFailed) && (len(rcs) != 1 || !errors.Is(rcs[0].Err, kerr.TopicAuthorizationFailed)) {
		t.Fatalf("alice describes a-x's configs: %+v %v", rcs, err)
	}
	one := "1"
	if res, err := aliceAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "min.insync.replicas", Value: &one}}, "a-x"); !errors.Is(err, kerr.TopicAuthorizationFailed) && (len(res) != 1 || !errors.Is(res[0].Err, kerr.TopicAuthorizationFailed)) {
		t.Fatalf("alice alters a-x's configs: %+v %v", res, err)
	}
	if resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, alice); err != nil || resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice describes the cluster: %+v %v", resp, err)
	}
	if res, err := aliceAdm.CreateACLs(ctx, kadm.NewACLs().Topics("a-x").Allow("User:alice").Operations(kadm.OpAll)); err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice grants herself ALL: %+v %v", res, err)
	}

	// READ on the prefix a-.
	grant := kadm.NewACLs().Topics("a-").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:alice").Operations(kadm.OpRead)
	if res, err := adm.CreateACLs(ctx, grant); err != nil || res[0].Err != nil {
		t.Fatalf("grant alice READ on a-*: %+v %v", res, err)
	}
	if v, err := consumeFirst(ctx, t, tn, "alice", "a-x"); err != nil || v != "from admin to a-x" {
		t.Fatalf("alice consumes a-x with READ on a-*: %q %v", v, err)
	}
	if _, err := consumeFirst(ctx, t, tn, "alice", "b-x"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice consumes b-x with READ on a-*: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if names := allTopics(ctx, t, alice); !slices.Equal(names, []string{"a-x"}) {
		t.Fatalf("alice's all-topics metadata with READ on a-*: %v, want a-x only (READ implies DESCRIBE)", names)
	}
	// Produce without WRITE: refused, nothing appended.
	plain := newClient(t, tn, plainAuth("alice", "alice-secret"), kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "a-x", Value: []byte("alice was here")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice produces to a-x with READ only: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	ends, err := adm.ListEndOffsets(ctx, "a-x")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("a-x", 0); o.Offset != 1 {
		t.Fatalf("a-x ends at %d after a refused produce, want 1", o.Offset)
	}

	// DENY beats ALLOW.
	deny := kadm.NewACLs().Topics("a-x").Deny("User:alice").Operations(kadm.OpRead)
	if res, err := adm.CreateACLs(ctx, deny); err != nil || res[0].Err != nil {
		t.Fatalf("deny alice READ on a-x: %+v %v", res, err)
	}
	if _, err := consumeFirst(ctx, t, tn, "alice", "a-x"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice consumes a-x with a DENY: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(described) != 1 || described[0].Err != nil || len(described[0].Described) != 2 {
		t.Fatalf("describe every ACL: %+v %v, want the ALLOW and the DENY", described, err)
	}
	// Removing the DENY restores READ at once.
	del, err := adm.DeleteACLs(ctx, kadm.NewACLs().Topics("a-x").Deny("User:alice").DenyHosts().Operations(kadm.OpRead))
	if err != nil || len(del) != 1 || del[0].Err != nil || len(del[0].Deleted) != 1 {
		t.Fatalf("delete the DENY: %+v %v", del, err)
	}
	if v, err := consumeFirst(ctx, t, tn, "alice", "a-x"); err != nil || v != "from admin to a-x" {
		t.Fatalf("alice consumes a-x after the DENY is gone: %q %v", v, err)
	}
	// bob has nothing; a wildcard-principal ALLOW WRITE on b-x lets both produce.
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("b-x").Allow("User:*").Operations(kadm.OpWrite)); err != nil || res[0].Err != nil {
		t.Fatalf("grant everyone WRITE on b-x: %+v %v", res, err)
	}
	bob := newClient(t, tn, plainAuth("bob", "bob-secret"), kgo.DefaultProduceTopic("b-x"))
	if err := bob.ProduceSync(ctx, &kgo.Record{Value: []byte("bob")}).FirstErr(); err != nil {
		t.Fatalf("bob's idempotent produce with WRITE on b-x (KIP-679): %v", err)
	}

	// Auto-creation through Metadata needs CREATE: alice may describe
	// a-auto (READ on a-) but not create it, until CREATE on a- is hers.
	autoCreate := func() int16 {
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("a-auto")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, alice)
		if err != nil || len(resp.Topics) != 1 {
			t.Fatalf("alice's auto-creating metadata: %+v %v", resp, err)
		}
		return resp.Topics[0].ErrorCode
	}
	if code := autoCreate(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice auto-creates a-auto without CREATE: %v", kerr.ErrorForCode(code))
	}
	if td, err := adm.ListTopics(ctx, "a-auto"); err != nil || td.Has("a-auto") && td["a-auto"].Err == nil {
		t.Fatalf("a-auto exists after a refused auto-creation: %v", err)
	}
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("a-").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:alice").Operations(kadm.OpCreate)); err != nil || res[0].Err != nil {
		t.Fatalf("grant alice CREATE on a-*: %+v %v", res, err)
	}
	if code := autoCreate(); code != 0 && code != kerr.LeaderNotAvailable.Code {
		t.Fatalf("alice auto-creates a-auto with CREATE: %v", kerr.ErrorForCode(code))
	}

	mfs := scrape(t, tn)
	if v := value(t, mfs, "kafka_security_authorizer_metrics_authorization_denied_total"); v < 10 {
		t.Fatalf("authorization denied: %v, want at least 10", v)
	}
	if v := value(t, mfs, "kafka_security_authorizer_metrics_authorization_allowed_total"); v < 10 {
		t.Fatalf("authorization allowed: %v", v)
	}
}

// TestACLsCluster: three nodes, SASL_PLAINTEXT between brokers too, with
// authorization on. The brokers authenticate as User:broker, a super
// user, so acks=all with min.insync.replicas=3 works (every follower
// fetches); alice's forged replica fetch (no CLUSTER_ACTION) is refused
// and counts for nothing. An ACL created on one node is in effect on
// every node when answered, and so is its removal.
func TestACLsCluster(t *testing.T) {
	nodes := startClusterWith(t, 3, "SASL_PLAINTEXT", aclSettings...)
	ctx := testCtx(t)
	admin := newClient(t, nodes[0], plainAuth("admin", "admin-secret"))
	adm := kadm.NewClient(admin)
	three := "3"
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &three}, "acl-rf3"); err != nil {
		t.Fatal(err)
	}
	grant := kadm.NewACLs().Topics("acl-rf3").Allow("User:alice").Operations(kadm.OpWrite, kadm.OpRead)
	if res, err := kadm.NewClient(newClient(t, nodes[1], plainAuth("admin", "admin-secret"))).CreateACLs(ctx, grant); err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("grant alice on node 2: %+v %v", res, err)
	}
	// In effect everywhere at once: alice describes the topic on each node.
	named := func(i int) int16 {
		cl := newClient(t, nodes[i], plainAuth("alice", "alice-secret"), kgo.RequestRetries(0))
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("acl-rf3")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 {
			t.Fatalf("alice's metadata on node %d: %+v %v", i+1, resp, err)
		}
		return resp.Topics[0].ErrorCode
	}
	for i := range nodes {
		if code := named(i); code != 0 {
			t.Fatalf("alice describes acl-rf3 on node %d right after the grant: %v", i+1, kerr.ErrorForCode(code))
		}
	}
	alice := newClient(t, nodes[2], plainAuth("alice", "alice-secret"), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceConsume(ctx, t, alice, newClient(t, nodes[0], plainAuth("alice", "alice-secret")), "acl-rf3", 100)

	// A replica fetch from alice, claiming to be a follower, is refused.
	md, err := adm.Metadata(ctx, "acl-rf3")
	if err != nil {
		t.Fatal(err)
	}
	p := md.Topics["acl-rf3"].Partitions[0]
	follower := p.Replicas[0]
	if follower == p.Leader {
		follower = p.Replicas[1]
	}
	forger := newClient(t, nodes[p.Leader-1], plainAuth("alice", "alice-secret"), kgo.RequestRetries(0))
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.ReplicaState.ID = follower, follower
	fetch.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "acl-rf3", md.Topics["acl-rf3"].ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1000, 1<<20, p.LeaderEpoch
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	br := forger.Broker(int(p.Leader))
	resp, err := br.RetriableRequest(ctx, fetch)
	if err != nil {
		t.Fatal(err)
	}
	fr := resp.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || fr.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || len(fr.Topics[0].Partitions[0].RecordBatches) != 0 {
		t.Fatalf("alice's forged replica fetch: %+v, want TOPIC_AUTHORIZATION_FAILED and no records", fr.Topics)
	}

	// Removed on node 3: refused on every node when answered.
	del, err := kadm.NewClient(newClient(t, nodes[2], plainAuth("admin", "admin-secret"))).DeleteACLs(ctx,
		kadm.NewACLs().Topics("acl-rf3").Allow("User:alice").AllowHosts().Operations(kadm.OpWrite, kadm.OpRead))
	if err != nil || len(del) != 2 || del[0].Err != nil || del[1].Err != nil || len(del[0].Deleted)+len(del[1].Deleted) != 2 {
		t.Fatalf("remove alice's ACLs on node 3: %+v %v", del, err)
	}
	for i := range nodes {
		if code := named(i); code != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("alice describes acl-rf3 on node %d right after the removal: %v, want TOPIC_AUTHORIZATION_FAILED", i+1, kerr.ErrorForCode(code))
		}
	}
}

// TestACLsMTLS: on an SSL listener with ssl.client.auth=required, the
// principal is the client certificate's name through
// ssl.principal.mapping.rules: CN=client maps to User:CLIENT (upper
// case), which no ACL allows until one does; CN=broker maps to the
// super user User:broker (the rules run in order: the first matches).
// A connection without a certificate is refused by TLS before any of it.
func TestACLsMTLS(t *testing.T) {
	pki := newTestPKI(t)
	tn := startNodeWith(t, t.TempDir(), Options{}, append(pki.settings("required"),
		"listeners=SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners=SSL://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT",
		"inter.broker.listener.name=SSL",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:broker",
		`ssl.principal.mapping.rules=RULE:^CN=(broker)$/$1/,RULE:^CN=(.*?)(,.*)?$/$1/U,DEFAULT`,
	)...)
	ctx := testCtx(t)
	asBroker := newClient(t, tn, kgo.DialTLSConfig(&tls.Config{RootCAs: pki.ca.Pool(), Certificates: []tls.Certificate{pki.broker.TLS()}}))
	createTopic(ctx, t, asBroker, "mtls", 1)
	client := newClient(t, tn, pki.clientTLS(true), kgo.RequestRetries(0))
	if names := allTopics(ctx, t, client); len(names) != 0 {
		t.Fatalf("User:CLIENT sees %v without ACLs", names)
	}
	if res, err := kadm.NewClient(asBroker).CreateACLs(ctx, kadm.NewACLs().Topics("mtls").Allow("User:CLIENT").Operations(kadm.OpDescribe)); err != nil || res[0].Err != nil {
		t.Fatalf("grant User:CLIENT: %+v %v", res, err)
	}
	if names := allTopics(ctx, t, client); !slices.Equal(names, []string{"mtls"}) {
		t.Fatalf("User:CLIENT sees %v with DESCRIBE on mtls", names)
	}
}

// TestKcatACL: librdkafka (kcat) as alice on a SASL node with the
// authorizer: without ACLs its produce fails with Kafka's topic
// authorization error and appends nothing, its consume fails the same;
// with READ on the topic it consumes the record admin wrote.
func TestKcatACL(t *testing.T) {
	path := kcatPath(t)
	tn := startACLNode(t)
	ctx := testCtx(t)
	admin := newClient(t, tn, plainAuth("admin", "admin-secret"))
	createTopic(ctx, t, admin, "kcat-acl", 1)
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "kcat-acl", Value: []byte("from admin")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	alice := []string{"-b", tn.KafkaAddr(), "-t", "kcat-acl", "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=PLAIN",
		"-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"}
	refusedRun := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, path, append(args, alice...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("kcat %v as alice without ACLs succeeded:\n%s", args, out)
		}
		if !strings.Contains(strings.ToLower(string(out)), "authorization failed") {
			t.Fatalf("kcat %v as alice: %v, want a topic authorization failure:\n%s", args, err, out)
		}
		return string(out)
	}
	refusedRun("alice was here\n", "-P", "-p", "0", "-X", "message.send.max.retries=0")
	refusedRun("", "-C", "-p", "0", "-o", "beginning", "-e", "-q")
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, "kcat-acl")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("kcat-acl", 0); o.Offset != 1 {
		t.Fatalf("kcat-acl ends at %d after kcat's refused produce, want 1", o.Offset)
	}
	if res, err := kadm.NewClient(admin).CreateACLs(ctx, kadm.NewACLs().Topics("kcat-acl").Allow("User:alice").Operations(kadm.OpRead)); err != nil || res[0].Err != nil {
		t.Fatalf("grant alice READ: %+v %v", res, err)
	}
	out := kcat(ctx, t, path, nil, append([]string{"-C", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%s\n"}, alice...)...)
	if string(out) != "from admin\n" {
		t.Fatalf("kcat as alice with READ consumed %q", out)
	}
}
