package config

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-log/sluice/node/group"
)

// TestGroupsDefaults: Kafka's defaults land in Config.Groups, and
// group.Config agrees with node/group's own defaults but for the bound
// group.max.size (0: none).
func TestGroupsDefaults(t *testing.T) {
	c, err := load(t, minimal, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := c.Groups
	if g.OffsetsTopicNumPartitions != 50 || g.OffsetsTopicReplicationFactor != 3 || g.OffsetsTopicSegmentBytes != 104857600 ||
		g.OffsetsCommitTimeout != 5*time.Second {
		t.Errorf("offsets topic defaults: %+v", g)
	}
	if want := group.DefaultConfig(); !reflect.DeepEqual(g.Coordinator, want) {
		t.Errorf("coordinator defaults %+v, want %+v", g.Coordinator, want)
	}
}

// TestGroupsKeys: each key parses into its field; bad values and a min
// session timeout above the max are refused.
func TestGroupsKeys(t *testing.T) {
	c, err := load(t, minimal+"offsets.topic.num.partitions=3\noffsets.topic.replication.factor=1\ngroup.initial.rebalance.delay.ms=0\n"+
		"group.min.session.timeout.ms=100\ngroup.max.size=10\noffsets.retention.minutes=2\noffset.metadata.max.bytes=10\noffsets.commit.timeout.ms=700\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	g := c.Groups
	if g.OffsetsTopicNumPartitions != 3 || g.OffsetsTopicReplicationFactor != 1 || g.Coordinator.InitialRebalanceDelay != 0 ||
		g.Coordinator.MinSessionTimeout != 100*time.Millisecond || g.Coordinator.MaxSize != 10 ||
		g.Coordinator.OffsetsRetention != 2*time.Minute || g.Coordinator.OffsetMetadataMaxBytes != 10 || g.OffsetsCommitTimeout != 700*time.Millisecond {
		t.Errorf("parsed %+v", g)
	}
	c, err = load(t, minimal+"group.consumer.min.session.timeout.ms=1000\ngroup.consumer.session.timeout.ms=3000\n"+
		"group.consumer.min.heartbeat.interval.ms=100\ngroup.consumer.heartbeat.interval.ms=500\ngroup.consumer.max.size=4\n"+
		"group.consumer.assignors=range,org.apache.kafka.coordinator.group.assignor.UniformAssignor\n"+
		"group.consumer.migration.policy=UPGRADE\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := c.Groups.Coordinator; g.ConsumerSessionTimeout != 3*time.Second || g.ConsumerHeartbeatInterval != 500*time.Millisecond ||
		g.ConsumerMaxSize != 4 || !reflect.DeepEqual(g.ConsumerAssignors, []string{"range", "uniform"}) || g.MigrationPolicy != "upgrade" {
		t.Errorf("parsed consumer keys %+v", g)
	}
	for _, bad := range []string{
		"group.consumer.session.timeout.ms=3000", "group.consumer.heartbeat.interval.ms=100",
		"group.consumer.assignors=sticky", "group.consumer.max.size=0", "group.consumer.migration.policy=sideways",
		"group.consumer.min.heartbeat.interval.ms=1\ngroup.consumer.heartbeat.interval.ms=50000\ngroup.consumer.max.heartbeat.interval.ms=60000",
		"offsets.topic.num.partitions=0", "offsets.topic.replication.factor=0", "offsets.topic.replication.factor=40000",
		"group.max.size=0", "offsets.commit.timeout.ms=0", "offset.metadata.max.bytes=-1",
		"group.min.session.timeout.ms=7000\ngroup.max.session.timeout.ms=6000",
	} {
		if _, err := load(t, minimal+bad+"\n", nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: err %v, want ErrInvalid", bad, err)
		}
	}
}
