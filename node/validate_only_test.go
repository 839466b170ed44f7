package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestValidateOnlyReadsImageInPlace: validateOnly CreateTopics and
// IncrementalAlterConfigs, planned against the image under View instead of
// a copy (broker.go validate), answer the codes a real change would and
// change nothing; DescribeConfigs, answered under View too, shows it.
// Through franz-go's kadm and sarama.
func TestValidateOnlyReadsImageInPlace(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(newClient(t, tn))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "exists"); err != nil {
		t.Fatal(err)
	}

	// kadm
	cr, err := adm.ValidateCreateTopics(ctx, 2, 1, nil, "exists", "fresh")
	if err != nil {
		t.Fatal(err)
	}
	if err := cr["exists"].Err; !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Errorf("validate create of an existing topic: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	if err := cr["fresh"].Err; err != nil {
		t.Errorf("validate create of a new topic: %v", err)
	}
	v, bad := "compact", "sideways"
	ar, err := adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: &v}}, "exists")
	if err != nil || ar[0].Err != nil {
		t.Fatalf("validate alter: %v %+v", err, ar)
	}
	ar, err = adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: &bad}}, "exists")
	if err != nil || !errors.Is(ar[0].Err, kerr.InvalidConfig) {
		t.Fatalf("validate alter to %q: %v %+v, want INVALID_CONFIG", bad, err, ar)
	}

	// sarama
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	sa, err := sarama.NewClusterAdmin([]string{tn.KafkaAddr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	if err := sa.CreateTopic("fresh2", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, true); err != nil {
		t.Errorf("sarama validate create: %v", err)
	}
	if err := sa.CreateTopic("exists", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, true); !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Errorf("sarama validate create of an existing topic: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	if err := sa.IncrementalAlterConfig(sarama.TopicResource, "exists", map[string]sarama.IncrementalAlterConfigsEntry{
		"cleanup.policy": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v},
	}, true); err != nil {
		t.Errorf("sarama validate alter: %v", err)
	}

	// Nothing changed: no new topics, the policy still the default.
	names, err := sa.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"fresh", "fresh2"} {
		if _, ok := names[n]; ok {
			t.Errorf("validateOnly created %s", n)
		}
	}
	entries, err := sa.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: "exists", ConfigNames: []string{"cleanup.policy"}})
	if err != nil || len(entries) != 1 || entries[0].Value != "delete" {
		t.Fatalf("cleanup.policy after validateOnly alters: %+v %v, want delete", entries, err)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "exists")
	if err != nil {
		t.Fatal(err)
	}
	c, err := rc.On("exists", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range c.Configs {
		if e.Key == "cleanup.policy" {
			found = true
			if e.MaybeValue() != "delete" {
				t.Errorf("kadm: cleanup.policy %q, want delete", e.MaybeValue())
			}
		}
	}
	if !found {
		t.Error("kadm: DescribeConfigs has no cleanup.policy")
	}
}
