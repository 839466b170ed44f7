package node

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestPartitionsPerRequestLimit: sluice.max.partitions.per.request bounds
// the partitions one CreateTopics or CreatePartitions request adds in all;
// over it every topic is refused with POLICY_VIOLATION and a message that
// names the setting, and nothing is created.
func TestPartitionsPerRequestLimit(t *testing.T) {
	tn := startNode(t, t.TempDir(), "sluice.max.partitions.per.request=20")
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, tn))

	resp, err := adm.CreateTopics(ctx, 11, 1, nil, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != kerr.PolicyViolation || !strings.Contains(r.ErrMessage, "sluice.max.partitions.per.request") {
			t.Errorf("22 partitions in one request: topic %s: %v %q, want POLICY_VIOLATION naming the setting", r.Topic, r.Err, r.ErrMessage)
		}
	}
	if md, err := adm.ListTopics(ctx); err != nil || len(md.Names()) != 0 {
		t.Fatalf("topics after a refused create: %v %v", md.Names(), err)
	}
	if _, err := adm.CreateTopic(ctx, 20, 1, nil, "a"); err != nil {
		t.Fatalf("20 partitions: %v", err)
	}
	pr, err := adm.CreatePartitions(ctx, 21, "a") // adds 21
	if err != nil {
		t.Fatal(err)
	}
	if r := pr["a"]; r.Err != kerr.PolicyViolation || !strings.Contains(r.ErrMessage, "in steps of at most 20") {
		t.Fatalf("adding 21 partitions: %v %q, want POLICY_VIOLATION", r.Err, r.ErrMessage)
	}
	if pr, err := adm.CreatePartitions(ctx, 20, "a"); err != nil || pr["a"].Err != nil {
		t.Fatalf("adding 20 partitions: %v %v", err, pr["a"].Err)
	}
}
