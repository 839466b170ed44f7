package kafka

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestUpdateFeatures: UpdateFeatures at each version against the fake's
// quorum image, and ApiVersions v3 listing the levels it finalizes with
// a growing epoch: v2 answers a top-level error only, v0-1 one result
// per feature; v0's AllowDowngrade is a safe downgrade; a refusal
// carries Kafka's code and the reason.
func TestUpdateFeatures(t *testing.T) {
	s, err := NewServer(newFakeData("127.0.0.1:9092"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	call := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		r := &request{key: req.Key(), version: req.GetVersion(), body: req, api: s.table.lookup(req.Key())}
		if r.api == nil {
			t.Fatalf("%s is not served", kmsg.NameForKey(req.Key()))
		}
		resp, err := r.api.handle(context.Background(), s, r)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	level := func() (int16, int64) {
		t.Helper()
		av := kmsg.NewPtrApiVersionsRequest()
		av.Version, av.ClientSoftwareName, av.ClientSoftwareVersion = 3, "t", "1"
		resp := call(av).(*kmsg.ApiVersionsResponse)
		if len(resp.SupportedFeatures) != 1 || resp.SupportedFeatures[0].Name != "transaction.version" || resp.SupportedFeatures[0].MaxVersion != 2 {
			t.Fatalf("supported features %+v", resp.SupportedFeatures)
		}
		for _, f := range resp.FinalizedFeatures {
			if f.Name == "transaction.version" {
				return f.MaxVersionLevel, resp.FinalizedFeaturesEpoch
			}
		}
		return 0, resp.FinalizedFeaturesEpoch
	}
	update := func(version int16, lvl int16, typ int8, allowDowngrade bool) *kmsg.UpdateFeaturesResponse {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version = version
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType, u.AllowDowngrade = "transaction.version", lvl, typ, allowDowngrade
		req.FeatureUpdates = append(req.FeatureUpdates, u)
		return call(req).(*kmsg.UpdateFeaturesResponse)
	}
	if l, e := level(); l != 2 || e != 0 {
		t.Fatalf("before any update: level %d epoch %d", l, e)
	}

	r := update(2, 1, 1, false)
	if r.ErrorCode != kerr.InvalidUpdateVersion.Code || r.ErrorMessage == nil || len(r.Results) != 0 {
		t.Fatalf("v2 downgrade typed as upgrade: %+v", r)
	}
	if r = update(0, 1, 0, true); r.ErrorCode != 0 || len(r.Results) != 1 || r.Results[0].ErrorCode != 0 || r.Results[0].Feature != "transaction.version" {
		t.Fatalf("v0 downgrade with AllowDowngrade: %+v", r)
	}
	l, e1 := level()
	if l != 1 || e1 < 1 {
		t.Fatalf("after the downgrade: level %d epoch %d", l, e1)
	}
	if r = update(1, 3, 1, false); r.ErrorCode != kerr.InvalidUpdateVersion.Code || len(r.Results) != 1 || r.Results[0].ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("v1 upgrade past the supported range: %+v", r)
	}
	if r = update(2, 2, 1, false); r.ErrorCode != 0 {
		t.Fatalf("v2 upgrade: %+v", r)
	}
	if l, e := level(); l != 2 || e <= e1 {
		t.Fatalf("after the upgrade: level %d epoch %d (was %d)", l, e, e1)
	}
}
