package quorum

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// harness plays the controller without Raft: Plan, then Replay of every
// record into the image (and an encode/decode round trip of each entry), with
// the invariants checked after every command.
type harness struct {
	im    *Image
	pol   Policy
	uuids int
}

func newHarness() *harness {
	h := &harness{im: NewImage()}
	h.pol.NewUUID = func() UUID {
		h.uuids++
		var u UUID
		u[15] = byte(h.uuids)
		u[14] = byte(h.uuids >> 8)
		return u
	}
	return h
}

// arg returns the raw value of key (comma-joined when datadriven split it).
func arg(d *datadriven.TestData, key string) (string, bool) {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			return strings.Join(a.Vals, ","), true
		}
	}
	return "", false
}

func argInt(t *testing.T, d *datadriven.TestData, key string, def int64) int64 {
	s, ok := arg(d, key)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", d.Pos, key, s, err)
	}
	return n
}

func ids(t *testing.T, s string) []int32 {
	var out []int32
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			t.Fatalf("bad id list %q", s)
		}
		out = append(out, int32(n))
	}
	return out
}

func kvs(s string) map[string]string {
	if s == "" {
		return nil
	}
	m := map[string]string{}
	for _, kv := range strings.Split(s, ";") {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func (h *harness) command(t *testing.T, d *datadriven.TestData) Command {
	id := int32(argInt(t, d, "id", -1))
	epoch := argInt(t, d, "epoch", AnyEpoch)
	topic, _ := arg(d, "topic")
	switch d.Cmd {
	case "register":
		rack, _ := arg(d, "rack")
		return &RegisterBroker{ID: id, Rack: rack, CleanShutdown: d.HasArg("clean"), PreviousBrokerEpoch: argInt(t, d, "prev-epoch", 0)}
	case "fence":
		return &FenceBroker{ID: id, Epoch: epoch}
	case "unfence":
		return &UnfenceBroker{ID: id, Epoch: epoch}
	case "shutdown":
		return &ControlledShutdown{ID: id, Epoch: epoch}
	case "log-dir-offline":
		dir, _ := arg(d, "dir")
		return &LogDirOffline{ID: id, Epoch: epoch, Dir: dir}
	case "create-topic":
		spec := TopicSpec{Name: topic, Partitions: int32(argInt(t, d, "partitions", 1)),
			ReplicationFactor: int16(argInt(t, d, "rf", 1))}
		if s, ok := arg(d, "config"); ok {
			spec.Configs = kvs(s)
		}
		if s, ok := arg(d, "assign"); ok {
			for _, reps := range strings.Split(s, ";") {
				spec.Assignments = append(spec.Assignments, ids(t, reps))
			}
		}
		return &CreateTopics{Topics: []TopicSpec{spec}}
	case "create-partitions":
		spec := PartitionsSpec{Name: topic, Count: int32(argInt(t, d, "count", 1))}
		if s, ok := arg(d, "assign"); ok {
			for _, reps := range strings.Split(s, ";") {
				spec.Assignments = append(spec.Assignments, ids(t, reps))
			}
		}
		return &CreatePartitions{Topics: []PartitionsSpec{spec}}
	case "delete-topic":
		return &DeleteTopics{Names: []string{topic}}
	case "alter-config":
		set, _ := arg(d, "set")
		del, _ := arg(d, "delete")
		c := &AlterConfigs{Topic: topic, Set: kvs(set)}
		if del != "" {
			c.Delete = strings.Split(del, ";")
		}
		return c
	case "alter-partition":
		tp := h.im.Topics[topic]
		var tid UUID
		if tp != nil {
			tid = tp.ID
		}
		broker := int32(argInt(t, d, "broker", 0))
		c := &AlterPartition{
			BrokerID: broker, BrokerEpoch: argInt(t, d, "broker-epoch", AnyEpoch), TopicID: tid,
			Partition:   int32(argInt(t, d, "partition", 0)),
			LeaderEpoch: int32(argInt(t, d, "leader-epoch", 0)), PartitionEpoch: int32(argInt(t, d, "partition-epoch", 0)),
		}
		isr, _ := arg(d, "isr")
		for _, m := range strings.Split(isr, ",") {
			idS, epS, hasEp := strings.Cut(m, ":")
			mem := ISRMember{ID: ids(t, idS)[0], Epoch: AnyEpoch}
			if hasEp {
				mem.Epoch, _ = strconv.ParseInt(epS, 10, 64)
			}
			c.NewISR = append(c.NewISR, mem)
		}
		return c
	case "elect":
		typ, _ := arg(d, "type")
		c := &ElectLeaders{Election: ElectPreferred}
		if typ == "unclean" {
			c.Election = ElectUnclean
		}
		if topic != "" {
			c.Partitions = []TopicPartition{{Topic: topic, Partition: int32(argInt(t, d, "partition", 0))}}
		}
		return c
	case "reassign":
		// reassign topic=t partition=0 replicas=(2,3,4), or cancel.
		spec := ReassignmentSpec{Topic: topic, Partition: int32(argInt(t, d, "partition", 0))}
		if s, ok := arg(d, "replicas"); ok {
			spec.Replicas = append([]int32{}, ids(t, s)...)
		}
		return &AlterPartitionReassignments{Partitions: []ReassignmentSpec{spec}, KeepReplicationFactor: d.HasArg("keep-rf")}
	case "alter-broker-config":
		set, _ := arg(d, "set")
		del, _ := arg(d, "delete")
		broker, _ := arg(d, "broker")
		c := &AlterBrokerConfigs{Broker: broker, Set: kvs(set)}
		if del != "" {
			c.Delete = strings.Split(del, ";")
		}
		return c
	case "unregister":
		return &UnregisterBroker{ID: id}
	case "set-cluster-id":
		// set-cluster-id cluster=C features=name=level;...
		cluster, _ := arg(d, "cluster")
		c := &SetClusterID{ClusterID: cluster}
		if s, ok := arg(d, "features"); ok {
			c.Features = map[string]int16{}
			for k, v := range kvs(s) {
				n, _ := strconv.Atoi(v)
				c.Features[k] = int16(n)
			}
		}
		return c
	case "update-features":
		// update-features set=name=level;... type=1|2|3 [validate]
		set, _ := arg(d, "set")
		c := &UpdateFeatures{ValidateOnly: d.HasArg("validate")}
		for _, kv := range strings.Split(set, ";") {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s: bad level %q", d.Pos, v)
			}
			c.Updates = append(c.Updates, FeatureUpdate{Name: k, Level: int16(n), UpgradeType: int8(argInt(t, d, "type", 1))})
		}
		return c
	case "producer-ids":
		return &AllocateProducerIDs{BrokerID: int32(argInt(t, d, "broker", 0)), BrokerEpoch: epoch}
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return nil
}

// names replaces topic ids with topic names in s.
func (h *harness) names(s string) string {
	var pairs []string
	for name, t := range h.im.Topics {
		pairs = append(pairs, t.ID.String(), name)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "policy":
		if s, ok := arg(d, "unclean"); ok {
			h.pol.UncleanLeaderElectionEnable = s == "true"
		}
		h.pol.EligibleLeaderReplicasVersion = int(argInt(t, d, "elr", int64(h.pol.EligibleLeaderReplicasVersion)))
		h.pol.MinInsyncReplicas = int(argInt(t, d, "min-isr", int64(h.pol.MinInsyncReplicas)))
		return "ok\n"
	case "image":
		topic, _ := arg(d, "topic")
		return h.im.Describe(topic)
	case "reassignments":
		var b strings.Builder
		for _, r := range h.im.Reassignments(nil) {
			fmt.Fprintf(&b, "%s/%d replicas=%v adding=%v removing=%v\n", r.Topic, r.Partition, r.Replicas, r.Adding, r.Removing)
		}
		if b.Len() == 0 {
			return "none\n"
		}
		return b.String()
	case "broker-config":
		// broker-config id=N key=K: N's effective dynamic value of K.
		key, _ := arg(d, "key")
		v, ok := h.im.BrokerConfig(int32(argInt(t, d, "id", 0)), key)
		if !ok {
			return "unset\n"
		}
		return v + "\n"
	case "unclean-elections":
		var b strings.Builder
		for _, u := range h.im.UncleanElections() {
			fmt.Fprintf(&b, "%s/%d leader=%d leader-epoch=%d lost-isr=%v\n", u.Topic, u.Partition, u.Leader, u.LeaderEpoch, u.LostISR)
		}
		return b.String()
	case "rebalance":
		// The active controller's leader.imbalance check: each broker's
		// imbalance, then the preferred election it plans (if any).
		var b strings.Builder
		for _, li := range LeaderImbalances(h.im) {
			fmt.Fprintf(&b, "%s\n", li)
		}
		c := PlanLeaderRebalance(h.im, int(argInt(t, d, "percent", 10)))
		if c == nil {
			return b.String() + "no election\n"
		}
		return b.String() + h.apply(t, d, c)
	}
	return h.apply(t, d, h.command(t, d))
}

// apply plans cmd, replays its records into the image, and prints them.
func (h *harness) apply(t *testing.T, d *datadriven.TestData, cmd Command) string {
	recs, reply, err := Plan(h.im, h.pol, cmd)
	var b strings.Builder
	if err != nil {
		fmt.Fprintf(&b, "error: %v\n", err)
	}
	switch r := reply.(type) {
	case *TopicsReply:
		for _, tr := range r.Topics {
			if tr.Code != 0 {
				fmt.Fprintf(&b, "error: %s: %s\n", tr.Name, tr.Message)
			}
		}
	case *ReassignmentsReply:
		for _, er := range r.Partitions {
			if er.Code != 0 {
				fmt.Fprintf(&b, "error: %s/%d: %s\n", er.Topic, er.Partition, er.Message)
			}
		}
	case *UpdateFeaturesReply:
		if r.Code != 0 {
			fmt.Fprintf(&b, "error: %s\n", r.Message)
		}
	case *ElectLeadersReply:
		for _, er := range r.Partitions {
			if er.Code != 0 {
				fmt.Fprintf(&b, "error: %s/%d: %s\n", er.Topic, er.Partition, er.Message)
			}
		}
	}
	if len(recs) > 0 {
		data, encErr := EncodeEntry(recs)
		if encErr != nil {
			t.Fatal(encErr)
		}
		decoded, decErr := DecodeEntry(data)
		if decErr != nil {
			t.Fatal(decErr)
		}
		for _, r := range decoded {
			fmt.Fprintf(&b, "%s\n", h.names(r.String()))
			if rerr := h.im.Replay(r); rerr != nil {
				fmt.Fprintf(&b, "replay error: %v\n", rerr)
			}
		}
	}
	if err := h.im.CheckInvariants(); err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	if reply != nil && d.HasArg("reply") {
		js, _ := json.Marshal(reply)
		fmt.Fprintf(&b, "reply: %s\n", js)
	}
	if b.Len() == 0 {
		return "no records\n"
	}
	return b.String()
}

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		switch p := filepath.ToSlash(path); {
		case strings.HasPrefix(p, "testdata/fuzz/"):
			return // go test -fuzz corpus (FuzzReadHello), not a script
		case strings.HasPrefix(p, "testdata/liveness/"):
			return // TestLivenessScript's
		}
		h := newHarness()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}
