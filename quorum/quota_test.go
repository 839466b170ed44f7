package quorum

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func strp(s string) *string { return &s }

// TestAlterClientQuotas: alterations replay into the image, each entry
// succeeds or fails as a whole with Kafka's codes, validate-only writes
// nothing, removing the last key forgets the entity, and a snapshot round
// trip keeps the quotas.
func TestAlterClientQuotas(t *testing.T) {
	im := NewImage()
	apply := func(cmd *AlterClientQuotas) []QuotaResult {
		t.Helper()
		recs, reply, err := Plan(im, Policy{}, cmd)
		if err != nil {
			t.Fatal(err)
		}
		b, err := EncodeEntry(recs)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := DecodeEntry(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range decoded {
			if err := im.Replay(r); err != nil {
				t.Fatal(err)
			}
		}
		return reply.(*AlterClientQuotasReply).Results
	}
	alice := QuotaEntity{User: strp("alice")}
	res := apply(&AlterClientQuotas{Entries: []QuotaAlteration{
		{Entity: alice, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1024}, {Key: QuotaRequestPercentage, Value: 12.5}}},
		{Entity: QuotaEntity{ClientDefault: true}, Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Value: 1.5}}},
		{Entity: QuotaEntity{Client: strp("c")}, Ops: []QuotaOp{{Key: "controller_mutation_rate", Value: 1}}},
		{Entity: QuotaEntity{Client: strp("c")}, Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Value: 0}}},
		{Entity: QuotaEntity{Client: strp("c")}, Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Value: 5}, {Key: QuotaConsumerByteRate, Value: 6}}},
		{Entity: QuotaEntity{}, Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Value: 5}}},
		{Invalid: "unknown entity type ip", Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Value: 5}}},
		{Entity: QuotaEntity{Client: strp("d")}, Ops: []QuotaOp{{Key: "bogus", Value: 5}}},
	}})
	want := []int16{0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	for i, w := range want {
		if res[i].Code != w {
			t.Errorf("entry %d: %+v, want code %d", i, res[i], w)
		}
	}
	if len(im.Quotas) != 1 || im.Quotas[alice.Key()].Values[QuotaRequestPercentage] != 12.5 {
		t.Fatalf("quotas %+v", im.Quotas)
	}
	if res := apply(&AlterClientQuotas{ValidateOnly: true, Entries: []QuotaAlteration{{Entity: QuotaEntity{Client: strp("c")}, Ops: []QuotaOp{{Key: QuotaConsumerByteRate, Value: 5}}}}}); res[0].Code != 0 || len(im.Quotas) != 1 {
		t.Fatalf("validate only: %+v, quotas %+v", res, im.Quotas)
	}

	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, im, 7); err != nil {
		t.Fatal(err)
	}
	back, _, err := ReadSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := back.ResolveQuota("alice", "any", QuotaProducerByteRate); !ok || m.Bound != 1024 {
		t.Fatalf("after a snapshot: %+v %v", m, ok)
	}
	clone := im.Clone()
	clone.Quotas[alice.Key()].Values[QuotaProducerByteRate] = 1
	if im.Quotas[alice.Key()].Values[QuotaProducerByteRate] != 1024 {
		t.Fatal("Clone shares the values")
	}

	apply(&AlterClientQuotas{Entries: []QuotaAlteration{{Entity: alice, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Remove: true}, {Key: QuotaRequestPercentage, Remove: true}}}}})
	if len(im.Quotas) != 0 {
		t.Fatalf("after removing every key: %+v", im.Quotas)
	}
}

// TestResolveQuota: Kafka's precedence, most specific first, and the
// sensor tags of each match (who shares one measurement).
func TestResolveQuota(t *testing.T) {
	im := NewImage()
	set := func(e QuotaEntity, v float64) {
		t.Helper()
		if err := im.Replay(&ClientQuotaRecord{Entity: e, Key: QuotaProducerByteRate, Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(user, client string, want QuotaMatch, wantOK bool) {
		t.Helper()
		got, ok := im.ResolveQuota(user, client, QuotaProducerByteRate)
		if ok != wantOK || got != want {
			t.Fatalf("%s/%s: %+v %v, want %+v %v", user, client, got, ok, want, wantOK)
		}
	}
	check("alice", "app", QuotaMatch{}, false)
	set(QuotaEntity{ClientDefault: true}, 8)
	check("alice", "app", QuotaMatch{Bound: 8, Client: "app"}, true)
	set(QuotaEntity{Client: strp("app")}, 7)
	check("alice", "app", QuotaMatch{Bound: 7, Client: "app"}, true)
	set(QuotaEntity{UserDefault: true}, 6)
	check("alice", "app", QuotaMatch{Bound: 6, UserTag: "alice"}, true)
	set(QuotaEntity{UserDefault: true, ClientDefault: true}, 5)
	check("alice", "app", QuotaMatch{Bound: 5, UserTag: "alice", Client: "app"}, true)
	set(QuotaEntity{UserDefault: true, Client: strp("app")}, 4)
	check("alice", "app", QuotaMatch{Bound: 4, UserTag: "alice", Client: "app"}, true)
	set(QuotaEntity{User: strp("alice")}, 3)
	check("alice", "app", QuotaMatch{Bound: 3, UserTag: "alice"}, true)
	check("bob", "app", QuotaMatch{Bound: 4, UserTag: "bob", Client: "app"}, true)
	set(QuotaEntity{User: strp("alice"), ClientDefault: true}, 2)
	check("alice", "app", QuotaMatch{Bound: 2, UserTag: "alice", Client: "app"}, true)
	set(QuotaEntity{User: strp("alice"), Client: strp("app")}, 1)
	check("alice", "app", QuotaMatch{Bound: 1, UserTag: "alice", Client: "app"}, true)
	check("alice", "other", QuotaMatch{Bound: 2, UserTag: "alice", Client: "other"}, true)
	if _, ok := im.ResolveQuota("alice", "app", QuotaConsumerByteRate); ok {
		t.Fatal("a consumer quota resolved where only producer quotas are set")
	}
}
