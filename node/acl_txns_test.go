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
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestACLsTransactions: the transaction APIs under Kafka's
// StandardAuthorizer, as AclAuthorizer's rules say. alice, with WRITE on
// topic t-x only, may not start, join, find, describe or end a
// transaction of id tx-a (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), nor
// see admin's transaction listed; her idempotent producer id comes from
// her topic WRITE (KIP-679), while bob, with no ACL, needs
// IDEMPOTENT_WRITE on the cluster. Granted WRITE on the prefix tx- she
// commits a transaction, describes and lists it, but may not put group
// gx's offsets in it (no READ on gx); a DENY on tx-deny beats the
// prefix grant.
func TestACLsTransactions(t *testing.T) {
	tn := startNodeWith(t, t.TempDir(), Options{}, append(append([]string{
		"listeners=SASL_PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"advertised.listeners=SASL_PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT",
		"inter.broker.listener.name=SASL_PLAINTEXT",
	}, aclSettings...), txnSettings...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	admin := newClient(t, tn, plainAuth("admin", "admin-secret"))
	adm := kadm.NewClient(admin)
	createTopic(ctx, t, admin, "t-x", 1)
	ap := newClient(t, tn, plainAuth("admin", "admin-secret"), kgo.TransactionalID("adm-tx"))
	if err := produceTxn(ctx, t, ap, "t-x", "adm", 3, true); err != nil {
		t.Fatalf("admin's transaction: %v", err)
	}
	grant := func(what string, b *kadm.ACLBuilder) {
		t.Helper()
		if res, err := adm.CreateACLs(ctx, b); err != nil || len(res) == 0 || res[0].Err != nil {
			t.Fatalf("%s: %+v %v", what, res, err)
		}
	}
	grant("alice WRITE on t-x", kadm.NewACLs().Topics("t-x").Allow("User:alice").Operations(kadm.OpWrite))

	alice := newClient(t, tn, plainAuth("alice", "alice-secret"), kgo.RequestRetries(0), kgo.RetryTimeout(0))
	seed := alice.SeedBrokers()[0]
	want := func(what string, code int16, err error, wantErr *kerr.Error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := kerr.ErrorForCode(code); got != wantErr && !(wantErr == nil && got == nil) {
			t.Fatalf("%s: %v, want %v", what, got, wantErr)
		}
	}
	initPIDAs := func(b *kgo.Broker, id *string) (*kmsg.InitProducerIDResponse, error) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = id, 60000
		return reqTo[*kmsg.InitProducerIDResponse](ctx, b, req)
	}
	denied := kerr.TransactionalIDAuthorizationFailed

	ip, err := initPIDAs(seed, kmsg.StringPtr("tx-a"))
	want("alice's InitProducerId for tx-a", ip.ErrorCode, err, denied)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{"tx-a"}
	fcr, err := reqTo[*kmsg.FindCoordinatorResponse](ctx, seed, fc)
	if err == nil && len(fcr.Coordinators) != 1 {
		t.Fatalf("FindCoordinator: %+v", fcr)
	}
	want("alice finds tx-a's coordinator", fcr.Coordinators[0].ErrorCode, err, denied)
	// AddPartitionsToTxn v3, a client's (v4+ is the brokers' verification
	// form, which needs CLUSTER_ACTION: CLUSTER_AUTHORIZATION_FAILED).
	addTo := func(version int16) (*kmsg.AddPartitionsToTxnResponse, error) {
		v := kversion.Stable()
		v.SetMaxKeyVersion(int16(kmsg.AddPartitionsToTxn), version)
		cl := newClient(t, tn, plainAuth("alice", "alice-secret"), kgo.RequestRetries(0), kgo.RetryTimeout(0), kgo.MaxVersions(v))
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = "tx-a", 1, 0
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = "t-x", []int32{0}
		req.Topics = append(req.Topics, rt)
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "tx-a", 1, 0, true
		txt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		txt.Topic, txt.Partitions = "t-x", []int32{0}
		tx.Topics = append(tx.Topics, txt)
		req.Transactions = append(req.Transactions, tx)
		return reqTo[*kmsg.AddPartitionsToTxnResponse](ctx, cl.SeedBrokers()[0], req)
	}
	apr, err := addTo(3)
	if err == nil && (len(apr.Topics) != 1 || len(apr.Topics[0].Partitions) != 1) {
		t.Fatalf("AddPartitionsToTxn v3: %+v", apr)
	}
	want("alice adds t-x to tx-a", apr.Topics[0].Partitions[0].ErrorCode, err, denied)
	apr, err = addTo(5)
	want("alice's AddPartitionsToTxn v5 (brokers' form)", apr.ErrorCode, err, kerr.ClusterAuthorizationFailed)
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = "tx-a", 1, 0, true
	etr, err := reqTo[*kmsg.EndTxnResponse](ctx, seed, et)
	want("alice ends tx-a", etr.ErrorCode, err, denied)
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"adm-tx"}
	dtr, err := reqTo[*kmsg.DescribeTransactionsResponse](ctx, seed, dt)
	if err == nil && len(dtr.TransactionStates) != 1 {
		t.Fatalf("DescribeTransactions: %+v", dtr)
	}
	want("alice describes adm-tx", dtr.TransactionStates[0].ErrorCode, err, denied)
	listed := func(cl *kgo.Client) []string {
		t.Helper()
		resp, err := kmsg.NewPtrListTransactionsRequest().RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("ListTransactions: %+v %v", resp, err)
		}
		var ids []string
		for _, s := range resp.TransactionStates {
			ids = append(ids, s.TransactionalID)
		}
		slices.Sort(ids)
		return ids
	}
	if ids := listed(alice); len(ids) != 0 {
		t.Fatalf("alice lists %v without transactional-id ACLs, want none", ids)
	}
	if ids := listed(admin); !slices.Contains(ids, "adm-tx") {
		t.Fatalf("admin lists %v, want adm-tx", ids)
	}

	// Idempotence: alice's WRITE on a topic is enough (KIP-679); bob
	// needs IDEMPOTENT_WRITE on the cluster.
	ip, err = initPIDAs(seed, nil)
	want("alice's idempotent InitProducerId", ip.ErrorCode, err, nil)
	bob := newClient(t, tn, plainAuth("bob", "bob-secret"), kgo.RequestRetries(0), kgo.RetryTimeout(0))
	ip, err = initPIDAs(bob.SeedBrokers()[0], nil)
	want("bob's idempotent InitProducerId", ip.ErrorCode, err, kerr.ClusterAuthorizationFailed)
	grant("bob IDEMPOTENT_WRITE", kadm.NewACLs().Clusters().Allow("User:bob").Operations(kadm.OpIdempotentWrite))
	ip, err = initPIDAs(bob.SeedBrokers()[0], nil)
	want("bob's idempotent InitProducerId with IDEMPOTENT_WRITE", ip.ErrorCode, err, nil)

	// WRITE on the prefix tx-: alice's transactional producer commits,
	// and she describes and lists her transaction (WRITE implies
	// DESCRIBE), still not admin's.
	grant("alice WRITE on tx-*", kadm.NewACLs().TransactionalIDs("tx-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:alice").Operations(kadm.OpWrite))
	grant("alice denied tx-deny", kadm.NewACLs().TransactionalIDs("tx-deny").Deny("User:alice").Operations(kadm.OpWrite))
	txp := newClient(t, tn, plainAuth("alice", "alice-secret"), kgo.TransactionalID("tx-a"))
	if err := produceTxn(ctx, t, txp, "t-x", "alice", 5, true); err != nil {
		t.Fatalf("alice's transaction with WRITE on tx-*: %v", err)
	}
	// The markers go out after EndTxn is answered: wait for CompleteCommit.
	waitFor(ctx, t, "alice describes tx-a CompleteCommit, and not adm-tx", func() bool {
		r := kmsg.NewPtrDescribeTransactionsRequest()
		r.TransactionalIDs = []string{"tx-a", "adm-tx"}
		dtr, err := reqTo[*kmsg.DescribeTransactionsResponse](ctx, seed, r)
		if err != nil || len(dtr.TransactionStates) != 2 {
			t.Fatalf("DescribeTransactions: %+v %v", dtr, err)
		}
		ok := true
		for _, s := range dtr.TransactionStates {
			switch s.TransactionalID {
			case "tx-a":
				ok = ok && s.ErrorCode == 0 && s.State == "CompleteCommit"
			case "adm-tx":
				if s.ErrorCode != denied.Code {
					t.Fatalf("alice describes adm-tx: %v, want %v", kerr.ErrorForCode(s.ErrorCode), denied)
				}
			}
		}
		return ok
	})
	if ids := listed(alice); !slices.Equal(ids, []string{"tx-a"}) {
		t.Fatalf("alice lists %v with WRITE on tx-*, want [tx-a]", ids)
	}
	// Offsets in a transaction need READ on the group too: AddOffsetsToTxn
	// and TxnOffsetCommit to group gx answer GROUP_AUTHORIZATION_FAILED.
	ip, err = initPIDAs(seed, kmsg.StringPtr("tx-a"))
	want("alice's InitProducerId for tx-a with WRITE on tx-*", ip.ErrorCode, err, nil)
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "tx-a", ip.ProducerID, ip.ProducerEpoch, "gx"
	aor, err := reqTo[*kmsg.AddOffsetsToTxnResponse](ctx, seed, ao)
	want("alice's AddOffsetsToTxn for group gx", aor.ErrorCode, err, kerr.GroupAuthorizationFailed)
	toc := kmsg.NewPtrTxnOffsetCommitRequest()
	toc.TransactionalID, toc.Group, toc.ProducerID, toc.ProducerEpoch, toc.Generation = "tx-a", "gx", ip.ProducerID, ip.ProducerEpoch, -1
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.Topic = "t-x"
	tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	tp.Partition, tp.Offset, tp.LeaderEpoch = 0, 1, -1
	tt.Partitions = append(tt.Partitions, tp)
	toc.Topics = append(toc.Topics, tt)
	tocr, err := reqTo[*kmsg.TxnOffsetCommitResponse](ctx, seed, toc)
	if err == nil && (len(tocr.Topics) != 1 || len(tocr.Topics[0].Partitions) != 1) {
		t.Fatalf("TxnOffsetCommit: %+v", tocr)
	}
	want("alice's TxnOffsetCommit to group gx", tocr.Topics[0].Partitions[0].ErrorCode, err, kerr.GroupAuthorizationFailed)
	ip, err = initPIDAs(seed, kmsg.StringPtr("tx-deny"))
	want("alice's InitProducerId for tx-deny (DENY beats the prefix ALLOW)", ip.ErrorCode, err, denied)
	ip, err = initPIDAs(seed, kmsg.StringPtr("other"))
	want("alice's InitProducerId for other", ip.ErrorCode, err, denied)
}
