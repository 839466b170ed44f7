package admin

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestHealthJudgement(t *testing.T) {
	md := kadm.Metadata{
		Controller: 1,
		Brokers:    kadm.BrokerDetails{{NodeID: 1}, {NodeID: 2}},
		Topics: kadm.TopicDetails{
			"ok": {Topic: "ok", Partitions: kadm.PartitionDetails{0: {Partition: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}}},
			"bad": {Topic: "bad", Partitions: kadm.PartitionDetails{
				0: {Partition: 0, Leader: 3, Replicas: []int32{3, 1, 2}, ISR: []int32{3}},
				1: {Partition: 1, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}},
			}},
			// Broker 2 is live but its replicas are offline: its log dir failed.
			"disk": {Topic: "disk", Partitions: kadm.PartitionDetails{0: {Partition: 0, Leader: 1, Replicas: []int32{2, 1}, ISR: []int32{1}, OfflineReplicas: []int32{2}}}},
		},
	}
	h := health(md, map[string]int{"bad": 2})
	if h.Healthy {
		t.Fatal("a cluster with a dead leader judged healthy")
	}
	for _, c := range []struct {
		name      string
		got, want []string
	}{
		{"leaderless", h.Leaderless, []string{"bad/0"}},
		{"under-replicated", h.UnderReplicated, []string{"bad/0", "bad/1", "disk/0"}},
		{"under-min-isr", h.UnderMinISR, []string{"bad/0"}},
		{"reasons", h.Reasons, []string{"nodes_down", "offline_log_dirs", "leaderless_partitions", "under_replicated_partitions", "under_min_isr_partitions"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if !slices.Equal(h.NodesDown, []int32{3}) {
		t.Errorf("nodes down %v", h.NodesDown)
	}
	if !slices.Equal(h.OfflineLogDirs, []int32{2}) {
		t.Errorf("nodes with offline log dirs %v", h.OfflineLogDirs)
	}
	delete(md.Topics, "bad")
	delete(md.Topics, "disk")
	h = health(md, nil)
	if h.judgeServing(nil); !h.Healthy || len(h.Reasons) != 0 {
		t.Fatalf("healthy cluster judged %+v", h)
	}
	// A leader the metadata names but that answers with an error.
	if h.judgeServing([]string{"ok/0: NOT_LEADER_OR_FOLLOWER"}); h.Healthy || !slices.Equal(h.Reasons, []string{"leaders_not_serving"}) {
		t.Fatalf("a leader that cannot serve judged %+v", h)
	}
}

func TestDescribeFilters(t *testing.T) {
	details := kadm.TopicDetails{"t": {Topic: "t", Partitions: kadm.PartitionDetails{
		0: {Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
		1: {Partition: 1, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}},
		2: {Partition: 2, Leader: -1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}},
	}}}
	live := map[int32]bool{1: true, 2: true, 3: true}
	cfg := map[string]string{"t": "min.insync.replicas=2"}
	count := func(f filters) int {
		n := 0
		for _, r := range f.apply(details, live, cfg) {
			n += len(r.Partitions)
		}
		return n
	}
	for _, c := range []struct {
		f    filters
		want int
	}{
		{filters{}, 3},
		{filters{underReplicated: true}, 2},
		{filters{underMinISR: true}, 1},
		{filters{atMinISR: true}, 1},
		{filters{unavailable: true}, 1},
	} {
		if got := count(c.f); got != c.want {
			t.Errorf("%+v: %d partitions, want %d", c.f, got, c.want)
		}
	}
}
