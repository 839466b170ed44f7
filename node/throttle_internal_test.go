package node

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/IBM/sarama"

	"github.com/sluice-log/sluice/quorum"
)

// TestThrottledReplicasConfig: the *.replication.throttled.replicas
// values Kafka takes, and which replicas they name.
func TestThrottledReplicasConfig(t *testing.T) {
	for _, ok := range []string{"", "*", "0:1", "0:1,0:2, 3:4"} {
		if err := checkThrottledReplicas(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"0", "a:1", "0:b", "0:1,", "-1:2", "0:1:2"} {
		if err := checkThrottledReplicas(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, tc := range []struct {
		v       string
		p, self int32
		want    bool
	}{
		{"*", 7, 3, true}, {"", 0, 1, false}, {"0:1,1:2", 1, 2, true}, {"0:1,1:2", 1, 1, false}, {"10:1", 0, 1, false},
	} {
		if got := throttledHere(tc.v, tc.p, tc.self); got != tc.want {
			t.Errorf("throttledHere(%q, %d, %d) = %v", tc.v, tc.p, tc.self, got)
		}
	}
}

// TestBrokerConfigsSarama: a second client library (sarama's
// ClusterAdmin) alters and describes dynamic broker configs: broker 1's
// own value and the cluster default, with their sources; the image
// carries them (every broker applies them from it); a static key is
// refused with INVALID_REQUEST.
func TestBrokerConfigsSarama(t *testing.T) {
	tn := startNode(t, t.TempDir())
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	adm, err := sarama.NewClusterAdmin([]string{tn.KafkaAddr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	set := func(name, key string, v *string) error {
		op := sarama.IncrementalAlterConfigsOperationSet
		if v == nil {
			op = sarama.IncrementalAlterConfigsOperationDelete
		}
		return adm.IncrementalAlterConfig(sarama.BrokerResource, name, map[string]sarama.IncrementalAlterConfigsEntry{key: {Operation: op, Value: v}}, false)
	}
	v1, v2 := "1000", "2000"
	if err := set("1", quorum.ConfigLeaderThrottleRate, &v1); err != nil {
		t.Fatal(err)
	}
	if err := set("", quorum.ConfigFollowerThrottleRate, &v2); err != nil {
		t.Fatal(err)
	}
	if err := set("1", "num.io.threads", &v1); !errors.Is(err, sarama.ErrInvalidRequest) {
		t.Errorf("static key: %v, want INVALID_REQUEST", err)
	}
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource, Name: "1", ConfigNames: []string{quorum.ConfigLeaderThrottleRate, quorum.ConfigFollowerThrottleRate}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		got[e.Name] = fmt.Sprintf("%s %v", e.Value, e.Source)
	}
	want := map[string]string{
		quorum.ConfigLeaderThrottleRate:   fmt.Sprintf("1000 %v", sarama.SourceDynamicBroker),
		quorum.ConfigFollowerThrottleRate: fmt.Sprintf("2000 %v", sarama.SourceDynamicDefaultBroker),
	}
	if !maps.Equal(got, want) {
		t.Errorf("described %v, want %v", got, want)
	}
	var im *quorum.Image
	tn.ctrl.View(func(x *quorum.Image) { im = x.Clone() })
	if r, ok := im.BrokerConfig(1, quorum.ConfigFollowerThrottleRate); !ok || r != "2000" {
		t.Errorf("image: broker 1's follower rate %q %v", r, ok)
	}
	if err := set("1", quorum.ConfigLeaderThrottleRate, nil); err != nil {
		t.Fatal(err)
	}
	tn.ctrl.View(func(x *quorum.Image) { im = x.Clone() })
	if _, ok := im.BrokerConfig(1, quorum.ConfigLeaderThrottleRate); ok {
		t.Error("broker 1's leader rate still set after its delete")
	}
}
