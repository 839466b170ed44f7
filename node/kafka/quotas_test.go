package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// fixedQuotas is a QuotaAdmin over one image (the quota manager's input).
type fixedQuotas struct{ im *quorum.Image }

func (f fixedQuotas) AlterClientQuotas(context.Context, *quorum.AlterClientQuotas) (*quorum.AlterClientQuotasReply, error) {
	return nil, nil
}
func (f fixedQuotas) ClientQuotas() []quorum.ClientQuota { return nil }
func (f fixedQuotas) ResolveQuota(user, clientID, key string) (quorum.QuotaMatch, bool) {
	return f.im.ResolveQuota(user, clientID, key)
}

// TestQuotaThrottle: Kafka's rate arithmetic. With 11 samples of 1 s, a
// new client's first bytes are spread over 10 s, so it may burst; once
// over, the throttle is (rate - bound) / bound × the span, at most one
// sample; clients of one user share a user quota's sensor, and a client
// without a quota is never throttled.
func TestQuotaThrottle(t *testing.T) {
	im := quorum.NewImage()
	alice := "alice"
	if err := im.Replay(&quorum.ClientQuotaRecord{Entity: quorum.QuotaEntity{User: &alice}, Key: quorum.QuotaProducerByteRate, Value: 1000}); err != nil {
		t.Fatal(err)
	}
	q := newQuotaManager(fixedQuotas{im}, 11, time.Second)
	t0 := time.Unix(1000, 0)
	if d := q.record(quorum.QuotaProducerByteRate, "User:alice", "a", 9000, t0); d != 0 {
		t.Fatalf("9,000 bytes over a 10 s span at 1,000/s: throttled %v", d)
	}
	// 11,000 bytes over the 10 s floor: 1,100/s, 10% over: 1 s, capped.
	if d := q.record(quorum.QuotaProducerByteRate, "User:alice", "b", 2000, t0.Add(100*time.Millisecond)); d != time.Second {
		t.Fatalf("11,000 bytes (client b shares alice's sensor): throttled %v, want the 1 s cap", d)
	}
	// 10,500 bytes: 5% over the 10 s span: 500 ms.
	q2 := newQuotaManager(fixedQuotas{im}, 11, time.Second)
	if d := q2.record(quorum.QuotaProducerByteRate, "User:alice", "a", 10500, t0); d != 500*time.Millisecond {
		t.Fatalf("10,500 bytes: throttled %v, want 500ms", d)
	}
	if d := q.record(quorum.QuotaProducerByteRate, "User:bob", "a", 1e9, t0); d != 0 {
		t.Fatalf("a user without a quota throttled %v", d)
	}
	// Eleven seconds on, the burst has left the window.
	if d := q.record(quorum.QuotaProducerByteRate, "User:alice", "a", 100, t0.Add(12*time.Second)); d != 0 {
		t.Fatalf("after the window: throttled %v", d)
	}
}

// TestDescribeClientQuotasMatch: exact, default and any components, strict
// or not, as Kafka filters entities.
func TestDescribeClientQuotasMatch(t *testing.T) {
	alice, app := "alice", "app"
	userApp := quorum.QuotaEntity{User: &alice, Client: &app}
	userDef := quorum.QuotaEntity{UserDefault: true}
	comp := func(typ string, match int8, name *string) kmsg.DescribeClientQuotasRequestComponent {
		return kmsg.DescribeClientQuotasRequestComponent{EntityType: typ, MatchType: kmsg.QuotasMatchType(match), Match: name}
	}
	for _, tc := range []struct {
		e      quorum.QuotaEntity
		comps  []kmsg.DescribeClientQuotasRequestComponent
		strict bool
		want   bool
	}{
		{userApp, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, &alice)}, false, true},
		{userApp, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, &alice)}, true, false},
		{userApp, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 2, nil), comp("client-id", 0, &app)}, true, true},
		{userApp, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 1, nil)}, false, false},
		{userDef, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 1, nil)}, true, true},
		{userDef, []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", 2, nil)}, false, false},
		{userDef, nil, false, true},
		{userDef, nil, true, false},
	} {
		if got := matchesQuota(tc.e, tc.comps, tc.strict); got != tc.want {
			t.Errorf("%s %+v strict=%v: %v, want %v", tc.e, tc.comps, tc.strict, got, tc.want)
		}
	}
}

// TestRequestQuotaExemptsBrokers: under a default user request_percentage
// quota, a client's requests are throttled once over it, while the
// brokers' own (replica fetches, WriteTxnMarkers, AddPartitionsToTxn v4+)
// never are.
func TestRequestQuotaExemptsBrokers(t *testing.T) {
	im := quorum.NewImage()
	if err := im.Replay(&quorum.ClientQuotaRecord{Entity: quorum.QuotaEntity{UserDefault: true}, Key: quorum.QuotaRequestPercentage, Value: 1}); err != nil {
		t.Fatal(err)
	}
	s := &Server{quotas: newQuotaManager(fixedQuotas{im}, 11, time.Second)}
	now := time.Unix(1000, 0)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(15)
	fetch.ReplicaState.ID = 2
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.SetVersion(4)
	for _, req := range []kmsg.Request{fetch, kmsg.NewPtrWriteTxnMarkersRequest(), add} {
		r := &request{body: req, principal: "User:broker"}
		s.requestQuota(r, req.ResponseKind(), 5*time.Second, now)
		if r.throttle != 0 {
			t.Fatalf("%s throttled %v", kmsg.NameForKey(req.Key()), r.throttle)
		}
	}
	md := kmsg.NewPtrMetadataRequest()
	resp := md.ResponseKind().(*kmsg.MetadataResponse)
	r := &request{body: md, principal: "User:alice"}
	s.requestQuota(r, resp, 5*time.Second, now)
	if r.throttle != time.Second || resp.ThrottleMillis != 1000 {
		t.Fatalf("a client's 5 s of handling under a 1%% quota: throttled %v (response %d ms), want the 1 s cap", r.throttle, resp.ThrottleMillis)
	}
}
