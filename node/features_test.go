package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsOf asks node rn for ApiVersions v3 through franz-go.
func (c *replCluster) apiVersionsOf(ctx context.Context, t *testing.T, rn *replNode) *kmsg.ApiVersionsResponse {
	t.Helper()
	one := c.client(kgo.SeedBrokers(rn.KafkaAddr()))
	defer one.Close()
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version, av.ClientSoftwareName, av.ClientSoftwareVersion = 3, "sluice-test", "1"
	resp, err := reqTo[*kmsg.ApiVersionsResponse](ctx, one.SeedBrokers()[0], av)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// apiMax is the highest version of key the first node lists.
func (c *replCluster) apiMax(ctx context.Context, t *testing.T, key kmsg.Key) int16 {
	t.Helper()
	for _, k := range c.apiVersionsOf(ctx, t, c.nodes[0]).ApiKeys {
		if k.ApiKey == key.Int16() {
			return k.MaxVersion
		}
	}
	return -1
}

// saramaFeature is feature name's finalized level and the epoch in
// node rn's ApiVersions v3 answer, read by sarama (its own decoder of
// the tagged fields).
func saramaFeature(t *testing.T, rn *replNode, name string) (int16, int64) {
	t.Helper()
	conf := sarama.NewConfig()
	conf.Version = sarama.V4_0_0_0
	b := sarama.NewBroker(rn.KafkaAddr())
	if err := b.Open(conf); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	resp, err := b.ApiVersions(&sarama.ApiVersionsRequest{Version: 3, ClientSoftwareName: "sarama", ClientSoftwareVersion: "1"})
	if err != nil {
		t.Fatalf("sarama ApiVersions to node %d: %v", rn.id, err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == name {
			return f.MaxVersionLevel, resp.FinalizedFeaturesEpoch
		}
	}
	return 0, resp.FinalizedFeaturesEpoch
}

// TestTransactionVersionFeature: transaction.version is a feature level
// of the metadata quorum (KIP-584) on three nodes. The first controller
// finalizes the node setting (2) at bootstrap, and every broker lists
// it in ApiVersions; kadm's UpdateFeatures refuses a downgrade typed as
// an upgrade, downgrades to 1 with a safe downgrade (sarama reads 1 and
// a higher epoch from every node at once), after which a new franz-go
// transactional producer uses the version 1 protocol
// (AddPartitionsToTxn, EndTxn below v5); back at 2 a new one uses
// version 2 (EndTxn v5, no AddPartitionsToTxn).
func TestTransactionVersionFeature(t *testing.T) {
	c := startReplCluster(t, 3, txnSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic = "tvf"
	c.createTopic(ctx, topic, 2, nil)
	adm := kadm.NewClient(c.client())

	level := func(want int16, after int64) int64 {
		t.Helper()
		var epoch int64
		for _, rn := range c.nodes {
			resp := c.apiVersionsOf(ctx, t, rn)
			if got := finalized(resp, "transaction.version"); got != want || resp.FinalizedFeaturesEpoch <= after {
				t.Fatalf("node %d (franz-go): transaction.version %d at epoch %d, want %d after epoch %d", rn.id, got, resp.FinalizedFeaturesEpoch, want, after)
			}
			got, e := saramaFeature(t, rn, "transaction.version")
			if got != want || e != resp.FinalizedFeaturesEpoch {
				t.Fatalf("node %d (sarama): transaction.version %d at epoch %d, want %d at %d", rn.id, got, e, want, resp.FinalizedFeaturesEpoch)
			}
			epoch = e
		}
		return epoch
	}
	e0 := level(2, 0)

	res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 1, UpgradeType: 1})
	if err != nil || !errors.Is(res["transaction.version"].Err, kerr.InvalidUpdateVersion) {
		t.Fatalf("a downgrade typed as an upgrade: %v %+v, want INVALID_UPDATE_VERSION", err, res)
	}
	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 1, UpgradeType: 2})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("safe downgrade to 1: %v", err)
	}
	e1 := level(1, e0)

	adds := func() float64 { return requestCount(t, c, "AddPartitionsToTxn", func(v int) bool { return v < 4 }) }
	ends5 := func() float64 { return requestCount(t, c, "EndTxn", func(v int) bool { return v >= 5 }) }
	a0, x0 := adds(), ends5()
	p1 := c.client(kgo.TransactionalID("tvf-1"), kgo.TransactionTimeout(30*time.Second))
	if err := produceTxn(ctx, t, p1, topic, "v1", 10, true); err != nil {
		t.Fatal(err)
	}
	if a, x := adds()-a0, ends5()-x0; a == 0 || x != 0 {
		t.Fatalf("at transaction.version 1: %v AddPartitionsToTxn and %v EndTxn v5 requests, want some and none", a, x)
	}

	if res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 2, UpgradeType: 1}); err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("upgrade to 2: %v", err)
	}
	level(2, e1)
	a0, x0 = adds(), ends5()
	p2 := c.client(kgo.TransactionalID("tvf-2"), kgo.TransactionTimeout(30*time.Second))
	if err := produceTxn(ctx, t, p2, topic, "v2", 10, true); err != nil {
		t.Fatal(err)
	}
	if a, x := adds()-a0, ends5()-x0; a != 0 || x == 0 {
		t.Fatalf("at transaction.version 2: %v AddPartitionsToTxn and %v EndTxn v5 requests, want none and some", a, x)
	}
}
