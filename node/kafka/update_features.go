package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// Features is the optional capability behind the cluster's feature flags
// (KIP-584): the levels ApiVersions v3+ lists, and UpdateFeatures.
type Features interface {
	// FinalizedFeatures returns the finalized levels by name and their
	// epoch (ApiVersions' FinalizedFeaturesEpoch), from the metadata
	// image; a level 0 feature is not in the map.
	FinalizedFeatures() (levels map[string]int16, epoch int64)
	// UpdateFeatures carries out c through the quorum and returns its
	// reply, once every live broker has it in effect; an error means
	// no answer (the connection closes).
	UpdateFeatures(ctx context.Context, c *quorum.UpdateFeatures) (*quorum.UpdateFeaturesReply, error)
}

// UpdateFeatures (key 57), versions 0-2; served when the Broker
// implements Features. Needs ALTER on the cluster
// (CLUSTER_AUTHORIZATION_FAILED).
//
// Behavior: every update is applied or none (the first refusal answers
// the request, as Kafka's controller does): INVALID_UPDATE_VERSION for a
// feature the controller does not know (Sluice knows
// transaction.version), a level outside its supported range, or a
// downgrade whose upgrade type is "upgrade"; INVALID_REQUEST for a
// feature named twice or no update. Level 0 removes the feature.
// ValidateOnly (v1+) checks without writing. The answer comes once
// every live broker has the new levels (ApiVersions answers them).
//
// Version notes: v0's AllowDowngrade is v1's safe downgrade; v2 has no
// per-feature results (the top-level error is the answer), v0-1 list
// each feature with the request's outcome.
func handleUpdateFeatures(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	cmd := &quorum.UpdateFeatures{ValidateOnly: req.ValidateOnly}
	for _, u := range req.FeatureUpdates {
		typ := u.UpgradeType
		if req.Version == 0 {
			typ = quorum.FeatureUpgrade
			if u.AllowDowngrade {
				typ = quorum.FeatureSafeDowngrade
			}
		}
		cmd.Updates = append(cmd.Updates, quorum.FeatureUpdate{Name: u.Feature, Level: u.MaxVersionLevel, UpgradeType: typ})
	}
	reply, err := s.broker.(Features).UpdateFeatures(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("broker update features: %w", err)
	}
	resp.ErrorCode = reply.Code
	if reply.Code != 0 {
		resp.ErrorMessage = kmsg.StringPtr(reply.Message)
	}
	if req.Version < 2 {
		for _, u := range req.FeatureUpdates {
			rr := kmsg.NewUpdateFeaturesResponseResult()
			rr.Feature, rr.ErrorCode = u.Feature, reply.Code
			if reply.Code != 0 {
				rr.ErrorMessage = kmsg.StringPtr(reply.Message)
			}
			resp.Results = append(resp.Results, rr)
		}
	}
	return resp, nil
}

// updateFeaturesDenied is the answer to a request without ALTER on the
// cluster.
func updateFeaturesDenied(req *kmsg.UpdateFeaturesRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	resp.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
	if req.Version < 2 {
		for _, u := range req.FeatureUpdates {
			rr := kmsg.NewUpdateFeaturesResponseResult()
			rr.Feature, rr.ErrorCode = u.Feature, resp.ErrorCode
			resp.Results = append(resp.Results, rr)
		}
	}
	return resp
}
