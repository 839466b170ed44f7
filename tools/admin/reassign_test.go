package admin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReassignJSONFormats: kafka-reassign-partitions.sh's files read and
// written as Kafka does, and the placement --generate proposes.
func TestReassignJSONFormats(t *testing.T) {
	var tm TopicsToMove
	if err := json.Unmarshal([]byte(`{"topics":[{"topic":"foo1"},{"topic":"foo2"}],"version":1}`), &tm); err != nil || len(tm.Topics) != 2 || tm.Topics[1].Topic != "foo2" {
		t.Fatalf("topics-to-move: %v %+v", err, tm)
	}
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"foo1","partition":0,"replicas":[5,6],"log_dirs":["any","any"]},{"topic":"foo2","partition":1,"replicas":[5]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := readReassignment(plan)
	if err != nil || len(r.Partitions) != 2 || !slices.Equal(r.Partitions[0].Replicas, []int32{5, 6}) || r.Partitions[1].Partition != 1 {
		t.Fatalf("reassignment file: %v %+v", err, r)
	}
	for _, bad := range []string{`{"version":1,"partitions":[]}`, `{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[]}]}`, `not json`} {
		if err := os.WriteFile(plan, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readReassignment(plan); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	cur := &Reassignment{Version: 1}
	for p := range int32(4) {
		cur.Partitions = append(cur.Partitions, partAssign("t", p, []int32{1, 2}))
	}
	prop, err := Propose(cur, []int32{2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	got, want := mustJSON(prop), `{"version":1,"partitions":[`+
		`{"topic":"t","partition":0,"replicas":[2,3],"log_dirs":["any","any"]},`+
		`{"topic":"t","partition":1,"replicas":[3,4],"log_dirs":["any","any"]},`+
		`{"topic":"t","partition":2,"replicas":[4,2],"log_dirs":["any","any"]},`+
		`{"topic":"t","partition":3,"replicas":[2,4],"log_dirs":["any","any"]}]}`
	if got != want {
		t.Errorf("proposed\n got %s\nwant %s", got, want)
	}
	if _, err := Propose(cur, []int32{9}); err == nil {
		t.Error("RF 2 over one broker was proposed")
	}
}

// TestReassignCommandsOnCluster: on three real nodes, --generate proposes
// moving a topic onto brokers 2 and 3, --execute starts it, --verify
// reports it complete, --cancel of a finished move is refused, and
// `cluster decommission` empties broker 2 with the records still there
// and unregisters it (refused before, while it hosted replicas).
func TestReassignCommandsOnCluster(t *testing.T) {
	_, bootstrap := startCluster(t, 3)
	dir := t.TempDir()
	mustRun(t, bootstrap, "topics", "create", "rt", "--partitions", "3", "--replication-factor", "1")
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.DefaultProduceTopic("rt"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 30 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	move := filepath.Join(dir, "move.json")
	if err := os.WriteFile(move, []byte(`{"topics":[{"topic":"rt"}],"version":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	gen := decode[map[string]*Reassignment](t, mustRun(t, bootstrap, "topics", "reassign", "--generate", "--topics-to-move-json-file", move, "--broker-list", "2,3", "--format", "json"))
	if len(gen["current"].Partitions) != 3 || len(gen["proposed"].Partitions) != 3 {
		t.Fatalf("generate: %+v", gen)
	}
	for _, p := range gen["proposed"].Partitions {
		if len(p.Replicas) != 1 || p.Replicas[0] == 1 {
			t.Fatalf("proposed %+v", p)
		}
	}
	plan := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(plan, []byte(mustJSON(gen["proposed"])), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, bootstrap, "topics", "reassign", "--execute", "--reassignment-json-file", plan, "--throttle", "50000000")
	if !strings.Contains(out, "Successfully started partition reassignments for rt-0,rt-1,rt-2") || !strings.Contains(out, "Save this to use as the --reassignment-json-file") ||
		!strings.Contains(out, "The inter-broker throttle limit was set to 50000000 B/s") {
		t.Fatalf("execute:\n%s", out)
	}
	throttle := func(broker int32) string {
		t.Helper()
		rcs, err := kadm.NewClient(cl).DescribeBrokerConfigs(ctx, broker)
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range rcs {
			for _, e := range rc.Configs {
				if e.Key == "leader.replication.throttled.rate" {
					return *e.Value + " " + e.Source.String()
				}
			}
		}
		return ""
	}
	if got := throttle(2); got != "50000000 DYNAMIC_BROKER_CONFIG" {
		t.Errorf("broker 2's leader.replication.throttled.rate after --execute --throttle: %q", got)
	}
	verified := func() bool {
		out, err := run(t, bootstrap, "topics", "reassign", "--verify", "--reassignment-json-file", plan)
		return err == nil && strings.Count(out, "is completed.") == 3 && strings.Contains(out, "Throttle was removed.")
	}
	waitFor(ctx, t, "the moves complete", verified)
	if got := throttle(2); got != "9223372036854775807 DEFAULT_CONFIG" {
		t.Errorf("broker 2's leader.replication.throttled.rate after --verify: %q", got)
	}
	rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, "rt")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rcs[0].Configs {
		if strings.HasSuffix(e.Key, ".replication.throttled.replicas") && e.Value != nil && *e.Value != "" {
			t.Errorf("after --verify rt has %s=%s", e.Key, *e.Value)
		}
	}
	out, err = run(t, bootstrap, "topics", "reassign", "--cancel", "--reassignment-json-file", plan)
	if err == nil || !strings.Contains(out, "NO_REASSIGNMENT_IN_PROGRESS") {
		t.Fatalf("cancel of a finished move: %v\n%s", err, out)
	}
	if _, err := run(t, bootstrap, "topics", "reassign", "--execute", "--verify", "--reassignment-json-file", plan); err == nil {
		t.Error("two actions accepted")
	}

	// Broker 2 hosts replicas: UnregisterBroker is refused, saying so.
	out, err = run(t, bootstrap, "cluster", "unregister", "--id", "2")
	if err == nil || !strings.Contains(out+err.Error(), "INVALID_REQUEST") || !strings.Contains(out+err.Error(), "still hosts replicas") {
		t.Fatalf("unregister of a broker with replicas: %v\n%s", err, out)
	}
	out, err = run(t, bootstrap, "cluster", "unregister", "--id", "9")
	if err == nil || !strings.Contains(out+err.Error(), "BROKER_ID_NOT_REGISTERED") {
		t.Fatalf("unregister of an unknown broker: %v\n%s", err, out)
	}
	out = mustRun(t, bootstrap, "cluster", "decommission", "--broker-id", "2")
	if !strings.Contains(out, "partitions moved off broker 2") || !strings.Contains(out, "Broker 2 unregistered") {
		t.Fatalf("decommission:\n%s", out)
	}
	adm := kadm.NewClient(cl)
	md, err := adm.Metadata(ctx, "rt")
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(md.Brokers.NodeIDs(), 2) {
		t.Errorf("after decommission the metadata still lists broker 2: %v", md.Brokers.NodeIDs())
	}
	for _, pd := range md.Topics["rt"].Partitions {
		if slices.Contains(pd.Replicas, 2) {
			t.Errorf("after decommission rt-%d has replicas %v", pd.Partition, pd.Replicas)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, "rt")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != 30 {
		t.Errorf("after the moves the topic ends at %d records in all, want 30", total)
	}
}

// waitFor polls cond every 200 ms until it holds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		tm := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-tm.C:
		}
	}
}

// TestProposeRackAware: with racks, every partition's replicas span
// min(RF, racks) racks, leaders rotate over all brokers, and a broker
// list where only some brokers have racks is refused.
func TestProposeRackAware(t *testing.T) {
	racks := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
	if got := RackAlternated([]int32{6, 5, 4, 3, 2, 1}, racks); !slices.Equal(got, []int32{1, 3, 5, 2, 4, 6}) {
		t.Errorf("rack-alternated list %v", got)
	}
	for _, rf := range []int{2, 3, 4} {
		cur := &Reassignment{Version: 1}
		for p := range int32(12) {
			cur.Partitions = append(cur.Partitions, partAssign("t", p, make([]int32, rf)))
		}
		prop, err := ProposeRackAware(cur, []int32{1, 2, 3, 4, 5, 6}, racks)
		if err != nil {
			t.Fatal(err)
		}
		leaders := map[int32]int{}
		for _, p := range prop.Partitions {
			used := map[string]bool{}
			for _, r := range p.Replicas {
				used[racks[r]] = true
			}
			if len(p.Replicas) != rf || len(used) != min(rf, 3) {
				t.Errorf("rf %d: partition %d: replicas %v span racks %v", rf, p.Partition, p.Replicas, used)
			}
			for i, r := range p.Replicas {
				if slices.Contains(p.Replicas[:i], r) {
					t.Errorf("rf %d: partition %d: replicas %v repeat %d", rf, p.Partition, p.Replicas, r)
				}
			}
			leaders[p.Replicas[0]]++
		}
		if len(leaders) != 6 {
			t.Errorf("rf %d: leaders %v: not every broker leads", rf, leaders)
		}
	}
	cur := &Reassignment{Version: 1, Partitions: []PartitionAssignment{partAssign("t", 0, []int32{1, 2})}}
	if _, err := ProposeRackAware(cur, []int32{1, 2, 7}, racks); err == nil || !strings.Contains(err.Error(), "--disable-rack-aware") {
		t.Errorf("brokers with and without racks: %v", err)
	}
	plain, err := ProposeRackAware(cur, []int32{7, 8}, racks)
	if err != nil || !slices.Equal(plain.Partitions[0].Replicas, []int32{7, 8}) {
		t.Errorf("no racks: %v %v", plain, err)
	}
}

// TestThrottledReplicas: --throttle's topic lists, as Kafka's tool: the
// moving partitions' current replicas throttled as leaders, the added
// ones as followers; merged with what the topic had.
func TestThrottledReplicas(t *testing.T) {
	cur := &Reassignment{Partitions: []PartitionAssignment{partAssign("t", 0, []int32{1, 2}), partAssign("t", 1, []int32{2, 3}), partAssign("u", 0, []int32{1})}}
	plan := &Reassignment{Partitions: []PartitionAssignment{partAssign("t", 0, []int32{2, 4}), partAssign("t", 1, []int32{2, 3}), partAssign("u", 0, []int32{3, 1})}}
	leader, follower := ThrottledReplicas(cur, plan)
	if got := mergeList("", leader["t"]); got != "0:1,0:2" {
		t.Errorf("t leader list %q", got)
	}
	if got := mergeList("", follower["t"]); got != "0:4" {
		t.Errorf("t follower list %q", got)
	}
	if got := mergeList("5:9", follower["u"]); got != "0:3,5:9" {
		t.Errorf("u follower list merged %q", got)
	}
	if got := mergeList("*", leader["u"]); got != "*" {
		t.Errorf("* merged %q", got)
	}
}
