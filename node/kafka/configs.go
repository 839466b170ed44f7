package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Configs is the optional Broker capability to describe and change
// configuration: DescribeConfigs and IncrementalAlterConfigs.
//
// Contract, besides Broker's: one result per resource given, in order; Err
// is a kerr error for the client (UNKNOWN_TOPIC_OR_PARTITION,
// INVALID_CONFIG, INVALID_REQUEST for a resource type not served, ...).
type Configs interface {
	// DescribeConfigs describes resources; a nil Keys asks for every key.
	DescribeConfigs(ctx context.Context, rs []ConfigResource) ([]ConfigResult, error)
	// AlterConfigs applies set and delete operations to each resource
	// (IncrementalAlterConfigs), or with validateOnly only checks them.
	AlterConfigs(ctx context.Context, rs []ConfigAlteration, validateOnly bool) ([]ConfigResult, error)
}

// Config resource types (Kafka's ConfigResource.Type).
const (
	ConfigResourceTopic  int8 = 2
	ConfigResourceBroker int8 = 4
)

// configAllowed checks op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a
// config resource: a topic on itself, a broker on the cluster. It
// returns the refusal's error, nil if allowed.
func configAllowed(s *Server, r *request, op kmsg.ACLOperation, typ int8, name string) error {
	if typ == ConfigResourceTopic {
		if !s.allowed(r, op, kmsg.ACLResourceTypeTopic, name) {
			return kerr.TopicAuthorizationFailed
		}
		return nil
	}
	if !s.clusterAllowed(r, op) {
		return kerr.ClusterAuthorizationFailed
	}
	return nil
}

// Config sources (Kafka's DescribeConfigsResponse.ConfigSource).
const (
	ConfigSourceTopic int8 = 1 // DYNAMIC_TOPIC_CONFIG
	// DYNAMIC_BROKER_CONFIG and DYNAMIC_DEFAULT_BROKER_CONFIG: a dynamic
	// broker config of one broker, and the cluster-wide default.
	ConfigSourceDynamicBroker        int8 = 2
	ConfigSourceDynamicDefaultBroker int8 = 3
	ConfigSourceStaticBroker         int8 = 4 // STATIC_BROKER_CONFIG
	ConfigSourceDefaultConfig        int8 = 5 // DEFAULT_CONFIG
)

// ConfigResource names one resource of DescribeConfigs.
type ConfigResource struct {
	Type int8
	Name string
	Keys []string
}

// ConfigEntry is one key of a described resource.
type ConfigEntry struct {
	Name     string
	Value    string
	ReadOnly bool
	Source   int8
	// Type is Kafka's ConfigType (1 BOOLEAN, 2 STRING, 3 INT, 5 LONG, ...).
	Type int8
	Doc  string
	// Sensitive values (private keys, passwords) are answered as null,
	// marked sensitive, as Kafka does.
	Sensitive bool
}

// ConfigResult is the outcome for one resource.
type ConfigResult struct {
	Err        error
	ErrMessage string
	Entries    []ConfigEntry
}

// ConfigAlteration is one resource of IncrementalAlterConfigs: Set holds
// SET operations, Delete the keys to reset to their default.
type ConfigAlteration struct {
	Type   int8
	Name   string
	Set    map[string]string
	Delete []string
}
