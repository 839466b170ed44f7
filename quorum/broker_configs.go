package quorum

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Dynamic broker configs (Kafka's BROKER config resources in KRaft's
// ConfigRecord): overrides stored in the quorum, for the cluster default
// (resource name "") or one broker (its id), and applied live on every
// broker as its image changes. A broker's effective value of a key is its
// own override, else the cluster default, else its static config. The
// node decides which keys are dynamic and checks values (node/configs.go);
// the quorum checks the resource name and stores what it is given, so a
// new dynamic key needs no new record.

// Dynamic broker config keys the brokers read from the image.
const (
	// ConfigLeaderThrottleRate (leader.replication.throttled.rate,
	// bytes/s) bounds what a leader sends to its throttled followers
	// (leader.replication.throttled.replicas) outside the ISR.
	ConfigLeaderThrottleRate = "leader.replication.throttled.rate"
	// ConfigFollowerThrottleRate (follower.replication.throttled.rate,
	// bytes/s) bounds what a broker fetches for its throttled follower
	// replicas (follower.replication.throttled.replicas) outside the ISR.
	ConfigFollowerThrottleRate = "follower.replication.throttled.rate"
	// The topic configs naming the throttled replicas: "*" or a list of
	// partition:broker.
	ConfigLeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	ConfigFollowerThrottledReplicas = "follower.replication.throttled.replicas"
)

// CmdAlterBrokerConfigs names AlterBrokerConfigs on the wire.
const CmdAlterBrokerConfigs CommandType = "alter_broker_configs"

// TypeBrokerConfig is the record of a dynamic broker config change.
const TypeBrokerConfig RecordType = "broker_config"

// AlterBrokerConfigs sets and deletes dynamic configs of one broker
// resource: Broker "" is the cluster-wide default, else a broker id
// (which need not be registered yet, as in Kafka).
type AlterBrokerConfigs struct {
	Broker string            `json:"broker"`
	Set    map[string]string `json:"set,omitempty"`
	Delete []string          `json:"delete,omitempty"`
}

// BrokerConfigRecord sets and deletes dynamic configs of Broker ("" for
// the cluster default).
type BrokerConfigRecord struct {
	Broker string            `json:"broker"`
	Set    map[string]string `json:"set,omitempty"`
	Delete []string          `json:"delete,omitempty"`
}

func (*AlterBrokerConfigs) CommandType() CommandType { return CmdAlterBrokerConfigs }
func (*AlterBrokerConfigs) newReply() any            { return nil }

func (*BrokerConfigRecord) Type() RecordType { return TypeBrokerConfig }

func (r *BrokerConfigRecord) String() string {
	name := r.Broker
	if name == "" {
		name = "<default>"
	}
	return fmt.Sprintf("broker-config %s set=%s delete=%v", name, formatConfigs(r.Set), r.Delete)
}

// ValidBrokerResource checks a BROKER config resource name: "" or a
// broker id (a non-negative integer).
func ValidBrokerResource(name string) error {
	if name == "" {
		return nil
	}
	if n, err := strconv.ParseInt(name, 10, 32); err != nil || n < 0 || strconv.FormatInt(n, 10) != name {
		return kerrf(kerr.InvalidRequest, "broker config resource %q: give a broker id, or an empty name for the cluster default", name)
	}
	return nil
}

func (p *planner) alterBrokerConfigs(c *AlterBrokerConfigs) ([]Record, any, error) {
	if err := ValidBrokerResource(c.Broker); err != nil {
		return nil, nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(c.Set)) {
		if slices.Contains(c.Delete, k) {
			return nil, nil, kerrf(kerr.InvalidRequest, "config %s both set and deleted", k)
		}
	}
	if len(c.Set) == 0 && len(c.Delete) == 0 {
		return nil, nil, nil
	}
	return []Record{&BrokerConfigRecord{Broker: c.Broker, Set: maps.Clone(c.Set), Delete: slices.Clone(c.Delete)}}, nil, nil
}

func (im *Image) replayBrokerConfig(r *BrokerConfigRecord) error {
	if ValidBrokerResource(r.Broker) != nil {
		return stale(r, "resource %q is not a broker id", r.Broker)
	}
	m := im.BrokerConfigs[r.Broker]
	if m == nil && len(r.Set) > 0 {
		m = map[string]string{}
		if im.BrokerConfigs == nil {
			im.BrokerConfigs = map[string]map[string]string{}
		}
		im.BrokerConfigs[r.Broker] = m
	}
	maps.Copy(m, r.Set)
	for _, k := range r.Delete {
		delete(m, k)
	}
	if len(m) == 0 {
		delete(im.BrokerConfigs, r.Broker)
	}
	if len(im.BrokerConfigs) == 0 {
		im.BrokerConfigs = nil
	}
	return nil
}

// BrokerConfig returns broker id's dynamic value of key: its own
// override, else the cluster default; ok is false when neither is set
// (the broker's static config applies).
func (im *Image) BrokerConfig(id int32, key string) (v string, ok bool) {
	if v, ok = im.BrokerConfigs[strconv.Itoa(int(id))][key]; ok {
		return v, true
	}
	v, ok = im.BrokerConfigs[""][key]
	return v, ok
}

func cloneBrokerConfigs(m map[string]map[string]string) map[string]map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]map[string]string, len(m))
	for k, v := range m {
		out[k] = maps.Clone(v)
	}
	return out
}
