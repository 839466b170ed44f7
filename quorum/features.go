package quorum

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Feature flags (KIP-584) live in the image as KRaft's FeatureLevelRecord:
// a finalized level per feature name, the same on every broker, changed
// by UpdateFeatures (kafka-features.sh, `sluice features`). The first
// controller writes the bootstrap levels with the cluster id (the
// node's config: transaction.version); an image without a level for a
// feature (a cluster bootstrapped before feature records existed) leaves
// the default to the node. Level 0 is "not finalized": its record
// removes the feature. FeaturesEpoch counts the feature records
// replayed, ApiVersions' FinalizedFeaturesEpoch (Kafka uses the metadata
// offset; any number that only grows serves the clients, which keep the
// answer with the highest epoch).

// FeatureTransactionVersion is Kafka's transaction.version feature:
// 2 is KIP-890 part 2.
const FeatureTransactionVersion = "transaction.version"

// FeatureRange is the levels of a feature this controller can finalize.
type FeatureRange struct {
	Name     string
	Min, Max int16
}

// SupportedFeatures lists the features the controller knows, by name.
// Every Sluice broker of a cluster runs the same code, so the brokers'
// supported ranges are these too.
func SupportedFeatures() []FeatureRange {
	return []FeatureRange{{Name: FeatureTransactionVersion, Min: 0, Max: 2}}
}

// supportedFeature returns name's range; false if unknown.
func supportedFeature(name string) (FeatureRange, bool) {
	for _, f := range SupportedFeatures() {
		if f.Name == name {
			return f, true
		}
	}
	return FeatureRange{}, false
}

// CmdUpdateFeatures names UpdateFeatures on the wire.
const CmdUpdateFeatures CommandType = "update_features"

// TypeFeatureLevel is the record type; part of the on-disk format.
const TypeFeatureLevel RecordType = "feature_level"

// The upgrade types of UpdateFeatures v1+ (v0's AllowDowngrade is
// SafeDowngrade).
const (
	FeatureUpgrade         int8 = 1
	FeatureSafeDowngrade   int8 = 2
	FeatureUnsafeDowngrade int8 = 3
)

// FeatureUpdate sets one feature's finalized level (0 removes it).
type FeatureUpdate struct {
	Name        string `json:"name"`
	Level       int16  `json:"level"`
	UpgradeType int8   `json:"upgrade_type"`
}

// UpdateFeatures is Kafka's UpdateFeatures: every update is applied, or
// none (the first refusal is the reply's). Reply: *UpdateFeaturesReply.
type UpdateFeatures struct {
	Updates      []FeatureUpdate `json:"updates"`
	ValidateOnly bool            `json:"validate_only,omitempty"`
}

// UpdateFeaturesReply is the outcome; Code is a Kafka error code.
type UpdateFeaturesReply struct {
	Code    int16  `json:"code"`
	Message string `json:"message,omitempty"`
}

func (*UpdateFeatures) CommandType() CommandType { return CmdUpdateFeatures }
func (*UpdateFeatures) newReply() any            { return &UpdateFeaturesReply{} }

// FeatureLevelRecord finalizes feature Name at Level (0: removes it).
type FeatureLevelRecord struct {
	Name  string `json:"name"`
	Level int16  `json:"level"`
}

func (*FeatureLevelRecord) Type() RecordType { return TypeFeatureLevel }

func (r *FeatureLevelRecord) String() string {
	return fmt.Sprintf("feature-level %s=%d", r.Name, r.Level)
}

// Feature returns name's finalized level; false when the image has
// none (never set, or set to 0).
func (im *Image) Feature(name string) (int16, bool) {
	l, ok := im.Features[name]
	return l, ok
}

// featureErr is a refusal with Kafka's message for the client.
func featureErr(name string, level int16, why string) error {
	return &scramError{kerr.InvalidUpdateVersion, fmt.Sprintf("invalid update version %d for feature %s: %s", level, name, why)}
}

// checkFeature validates one update as Kafka's FeatureControlManager
// does; nil if fine.
func (im *Image) checkFeature(u FeatureUpdate) error {
	r, ok := supportedFeature(u.Name)
	if !ok {
		var names []string
		for _, f := range SupportedFeatures() {
			names = append(names, f.Name)
		}
		return featureErr(u.Name, u.Level, "the controller does not support the given feature (supported: "+strings.Join(names, ", ")+")")
	}
	if u.Level < 0 {
		return featureErr(u.Name, u.Level, "a feature level cannot be negative")
	}
	if u.Level != 0 && (u.Level < r.Min || u.Level > r.Max) {
		return featureErr(u.Name, u.Level, fmt.Sprintf("the controller only supports levels %d-%d", r.Min, r.Max))
	}
	switch u.UpgradeType {
	case FeatureUpgrade, FeatureSafeDowngrade, FeatureUnsafeDowngrade:
	default:
		return featureErr(u.Name, u.Level, fmt.Sprintf("unknown upgrade type %d (1 upgrade, 2 safe downgrade, 3 unsafe downgrade)", u.UpgradeType))
	}
	cur := im.Features[u.Name]
	if u.Level < cur && u.UpgradeType == FeatureUpgrade {
		return featureErr(u.Name, u.Level, fmt.Sprintf("can't downgrade from %d without setting the upgrade type to either safe or unsafe downgrade (kafka-features.sh downgrade)", cur))
	}
	return nil
}

func (p *planner) updateFeatures(c *UpdateFeatures) ([]Record, any, error) {
	reply := &UpdateFeaturesReply{}
	if len(c.Updates) == 0 {
		reply.Code, reply.Message = kerr.InvalidRequest.Code, "no feature updates given"
		return nil, reply, nil
	}
	seen := map[string]bool{}
	var recs []Record
	for _, u := range c.Updates {
		err := p.im.checkFeature(u)
		if err == nil && seen[u.Name] {
			err = &scramError{kerr.InvalidRequest, "feature " + u.Name + " updated twice"}
		}
		if err != nil {
			reply.Code, reply.Message = ErrorCode(err), errMessage(err)
			return nil, reply, nil
		}
		seen[u.Name] = true
		if u.Level != p.im.Features[u.Name] {
			recs = append(recs, &FeatureLevelRecord{Name: u.Name, Level: u.Level})
		}
	}
	if c.ValidateOnly {
		return nil, reply, nil
	}
	return recs, reply, nil
}

// bootstrapFeatures checks the levels written with the cluster id, in
// name order.
func bootstrapFeatures(levels map[string]int16) ([]Record, error) {
	var recs []Record
	for _, name := range slices.Sorted(maps.Keys(levels)) {
		l := levels[name]
		if err := NewImage().checkFeature(FeatureUpdate{Name: name, Level: l, UpgradeType: FeatureUpgrade}); err != nil {
			return nil, fmt.Errorf("bootstrap feature level: %w", err)
		}
		if l != 0 {
			recs = append(recs, &FeatureLevelRecord{Name: name, Level: l})
		}
	}
	return recs, nil
}

// replayFeatureLevel applies a FeatureLevelRecord (called by Replay).
func (im *Image) replayFeatureLevel(r *FeatureLevelRecord) error {
	if _, ok := supportedFeature(r.Name); !ok || r.Level < 0 {
		return stale(r, "feature %s level %d is not supported", r.Name, r.Level)
	}
	if r.Level == 0 {
		delete(im.Features, r.Name)
	} else {
		if im.Features == nil {
			im.Features = map[string]int16{}
		}
		im.Features[r.Name] = r.Level
	}
	im.FeaturesEpoch++
	return nil
}
