package group

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDataDriven runs the scripts in testdata/: one shard, a clock, the
// requests of scripted clients, the Appends acknowledged at once (auto-ack,
// the default) or one by one. Every clock move checks that a tick before
// NextDue changes nothing. Regenerate with -rewrite.
func TestDataDriven(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt") // testdata/fuzz holds the fuzz corpus
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			h := newHarness(t)
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				h.t, h.d = t, d
				h.out.Reset()
				h.run()
				return h.out.String()
			})
		})
	}
}

// testConfig is DefaultConfig with the initial delay off (scripts turn it
// on) and a short retention, so that scripts stay small.
func testConfig() Config {
	c := DefaultConfig()
	c.InitialRebalanceDelay = 0
	return c
}

func (h *harness) run() {
	switch h.d.Cmd {
	case "shard":
		h.newShard()
	case "load":
		h.s.LoadDone(h.now)
		seedLabel(h.s.idSeed)
		h.printf("loaded at %s", h.since(h.now))
	case "restart":
		// A new coordinator: a new shard replays the log.
		h.cfg.MaxSize = int(h.int("max-size", int64(h.cfg.MaxSize)))
		h.cfg.OffsetsRetention = h.dur("retention", h.cfg.OffsetsRetention)
		h.newShardFrom(h.log)
		h.printf("replayed %d records", len(h.log))
	case "tick":
		h.advance(h.now.Add(h.dur("d", 0)))
		h.printf("now %s", h.since(h.now))
	case "due":
		h.printf("now=%s next due=%s", h.since(h.now), h.since(h.s.NextDue()))
	case "state":
		h.out.WriteString(h.dump(h.s))
	case "join":
		h.join()
	case "sync":
		h.sync()
	case "heartbeat":
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version = int16(h.int("v", 4))
		req.Group, req.MemberID, req.Generation = h.str("g", "g"), h.long(h.str("member", "")), int32(h.int("gen", -1))
		req.InstanceID = h.strp("instance")
		h.step(req)
	case "leave":
		h.leave()
	case "commit":
		h.commit()
	case "fetch":
		h.fetch()
	case "txn-commit":
		h.txnCommit()
	case "complete-txn":
		// The marker of producer pid's transaction: written to the log
		// (unless log=false: past what a load reads) and, unless
		// live=false, reported with CompleteTxn.
		pid, commit := h.int("pid", 1), h.str("result", "commit") == "commit"
		if h.str("log", "true") == "true" {
			h.log = append(h.log, logRec{pid: pid, marker: true, commit: commit})
		}
		if h.str("live", "true") == "true" {
			h.s.CompleteTxn(h.now, pid, commit)
			h.printf("completed producer %d: %s", pid, h.str("result", "commit"))
			h.drain()
		}
	case "delete-offsets":
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = h.str("g", "g")
		for t, ps := range h.partitions("topics") {
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = t
			for _, p := range ps {
				rp := kmsg.NewOffsetDeleteRequestTopicPartition()
				rp.Partition = p
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		sort.Slice(req.Topics, func(i, j int) bool { return req.Topics[i].Topic < req.Topics[j].Topic })
		h.step(req)
	case "delete-groups":
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version = int16(h.int("v", 2))
		req.Groups = h.list("groups")
		h.step(req)
	case "describe":
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version = int16(h.int("v", 5))
		req.Groups = h.list("groups")
		h.step(req)
	case "list":
		for _, g := range h.s.ListGroups(h.list("states"), h.list("types")) {
			h.printf("%s type=%s protocol-type=%q state=%s", g.Group, g.GroupType, g.ProtocolType, g.GroupState)
		}
	case "appended":
		h.appended()
	case "replay-check":
		h.replayCheck()
	case "stats":
		st := h.s.Stats()
		for _, n := range stateNames {
			h.printf("%s=%d", n, st.Groups[n])
		}
		for _, n := range ConsumerGroupStates {
			if c := st.ConsumerGroups[n]; c > 0 {
				h.printf("consumer %s=%d", n, c)
			}
		}
		h.printf("expired=%d commits=%d rebalances=%d members=%d", st.Expired, st.Commits, st.Rebalances, st.Members)
	case "topics-deleted":
		h.s.TopicsDeleted(h.now, h.list("topics"))
		h.drain()
	default:
		if !h.runConsumer() {
			h.t.Fatalf("%s: unknown command %q", h.d.Pos, h.d.Cmd)
		}
	}
}

func (h *harness) newShard() {
	h.cfg = testConfig()
	h.cfg.InitialRebalanceDelay = h.dur("initial-delay", 0)
	h.cfg.MaxSize = int(h.int("max-size", 0))
	h.cfg.OffsetsRetention = h.dur("retention", h.cfg.OffsetsRetention)
	h.cfg.RetentionCheckInterval = h.dur("check-interval", h.cfg.RetentionCheckInterval)
	h.cfg.OffsetMetadataMaxBytes = int(h.int("metadata-max", int64(h.cfg.OffsetMetadataMaxBytes)))
	h.cfg.ConsumerMaxSize = int(h.int("consumer-max-size", 0))
	h.cfg.MigrationPolicy = h.str("migration", MigrationBidirectional)
	h.autoAck = h.str("auto-ack", "true") == "true"
	h.log, h.pending = nil, nil
	h.s = NewShard(0, h.cfg)
	h.s.groupBudget = int(h.int("group-budget", MaxGroupMetadataBytes))
	idSeeds = nil
	if h.str("loaded", "true") == "true" {
		h.s.LoadDone(h.now)
		seedLabel(h.s.idSeed)
	}
}

func (h *harness) newShardFrom(log []logRec) *Shard {
	h.s = NewShard(0, h.cfg)
	if err := replayLog(h.s, log); err != nil {
		h.t.Fatalf("%s: replay: %v", h.d.Pos, err)
	}
	h.pending = nil
	return h.s
}

// replayCheck replays the log into a new shard and compares what must
// survive a failover: groups (generation, protocol, leader, members with
// their metadata and assignments) and offsets.
func (h *harness) replayCheck() {
	live := h.persisted(h.s)
	r := NewShard(0, h.cfg)
	if err := replayLog(r, h.log); err != nil {
		h.t.Fatalf("%s: replay: %v", h.d.Pos, err)
	}
	replayed := h.persisted(r)
	if live != replayed {
		h.t.Fatalf("%s: replay differs:\nlive:\n%s\nreplayed:\n%s", h.d.Pos, live, replayed)
	}
	h.printf("replay of %d records matches:", len(h.log))
	h.out.WriteString(live)
}

func persistedState(s *Shard) string {
	var b strings.Builder
	for _, id := range sortedKeys(s.groups) {
		g := s.groups[id]
		st := "Empty"
		if len(g.members) > 0 {
			st = "Stable"
		}
		fmt.Fprintf(&b, "%s: %s gen=%d type=%q protocol=%q leader=%s\n", id, st, g.generation, g.protocolType, g.protocol, short(g.leader))
		if g.consumer != nil {
			dumpConsumer(&b, g.consumer, nil)
		}
		for _, m := range g.sortedMembers() {
			fmt.Fprintf(&b, "  %s instance=%q client=%s/%s session=%s rebalance=%s meta=%s assignment=%s\n", short(m.id), m.instanceID,
				m.clientID, m.clientHost, m.session, m.rebalance, fmtMeta(m.metadata(g.protocol)), fmtMeta(m.assignment))
		}
		for _, t := range sortedKeys(g.offsets) {
			for _, p := range sortedKeys(g.offsets[t]) {
				o := g.offsets[t][p]
				fmt.Fprintf(&b, "  offset %s/%d=%d epoch=%d meta=%q at=%d\n", t, p, o.offset, o.leaderEpoch, o.metadata, o.commitMs)
			}
		}
		for _, pid := range sortedKeys(g.txns) {
			pt := g.txns[pid]
			ks := make([]tp, 0, len(pt))
			for k := range pt {
				ks = append(ks, k)
			}
			slices.SortFunc(ks, func(a, b tp) int { return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.part, b.part)) })
			for _, k := range ks {
				o := pt[k]
				fmt.Fprintf(&b, "  pending producer=%d %s/%d=%d epoch=%d meta=%q at=%d\n", pid, k.topic, k.part, o.offset, o.leaderEpoch, o.metadata, o.commitMs)
			}
		}
	}
	return b.String()
}

func (h *harness) persisted(s *Shard) string { return persistedState(s) }

// protocols builds the join's protocols: protocols=range,roundrobin with
// topics=a,b (the consumer protocol's subscription) or meta=text, or
// meta-size=N bytes.
func (h *harness) protocols() []kmsg.JoinGroupRequestProtocol {
	var meta []byte
	if topics := h.list("topics"); topics != nil {
		m := kmsg.NewConsumerMemberMetadata()
		m.Version = 0
		m.Topics = topics
		if _, ok := h.arg("owned"); ok { // v1: the partitions it owns (a cooperative client)
			m.Version = 1
			parts := h.partitions("owned")
			for _, t := range sortedKeys(parts) {
				if t != "" {
					op := kmsg.NewConsumerMemberMetadataOwnedPartition()
					op.Topic, op.Partitions = t, parts[t]
					m.OwnedPartitions = append(m.OwnedPartitions, op)
				}
			}
		}
		meta = m.AppendTo(nil)
	} else if n := h.int("meta-size", -1); n >= 0 {
		meta = make([]byte, n)
	} else {
		meta = []byte(h.str("meta", "m"))
	}
	var out []kmsg.JoinGroupRequestProtocol
	for _, name := range h.list("protocols") {
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = name, meta
		out = append(out, p)
	}
	return out
}

func (h *harness) join() {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = int16(h.int("v", 9))
	req.Group = h.str("g", "g")
	req.MemberID = h.long(h.str("member", ""))
	req.InstanceID = h.strp("instance")
	req.SessionTimeoutMillis = int32(h.dur("session", 10*time.Second) / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(h.dur("rebalance", 30*time.Second) / time.Millisecond)
	req.ProtocolType = h.str("type", "consumer")
	if _, ok := h.arg("protocols"); !ok {
		h.d.CmdArgs = append(h.d.CmdArgs, datadriven.CmdArg{Key: "protocols", Vals: []string{"range"}})
	}
	req.Protocols = h.protocols()
	h.step(req)
}

func (h *harness) sync() {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = int16(h.int("v", 5))
	req.Group, req.MemberID, req.Generation = h.str("g", "g"), h.long(h.str("member", "")), int32(h.int("gen", -1))
	req.InstanceID = h.strp("instance")
	req.ProtocolType = h.strp("type")
	req.Protocol = h.strp("protocol")
	for _, a := range h.list("assign") {
		id, val, _ := strings.Cut(a, "=")
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = h.long(id), []byte(val)
		if strings.HasPrefix(val, "@") { // @t/0/1+u/2: the consumer protocol's assignment
			ga.MemberAssignment = consumerAssignment(val[1:])
		}
		if n, err := strconv.Atoi(val); err == nil && n > 1000 {
			ga.MemberAssignment = make([]byte, n)
		}
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	h.step(req)
}

func (h *harness) leave() {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = int16(h.int("v", 5))
	req.Group = h.str("g", "g")
	if req.Version < 3 {
		req.MemberID = h.long(h.str("member", ""))
	}
	// members=id,id2 or instance:i1 or id/instance:i1
	for _, m := range h.list("members") {
		lm := kmsg.NewLeaveGroupRequestMember()
		id, inst, _ := strings.Cut(m, "instance:")
		lm.MemberID = h.long(strings.TrimSuffix(id, "/"))
		if inst != "" {
			lm.InstanceID = &inst
		}
		req.Members = append(req.Members, lm)
	}
	h.step(req)
}

// partitions parses t1/0,t1/1,t2/0 (or t1/0=10 with offsets).
func (h *harness) partitions(key string) map[string][]int32 {
	out := map[string][]int32{}
	for _, tp := range h.list(key) {
		tp, _, _ = strings.Cut(tp, "=")
		t, p, _ := strings.Cut(tp, "/")
		n, _ := strconv.Atoi(p)
		out[t] = append(out[t], int32(n))
	}
	return out
}

func (h *harness) commit() {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = int16(h.int("v", 9))
	req.Group, req.MemberID, req.Generation = h.str("g", "g"), h.long(h.str("member", "")), int32(h.int("gen", -1))
	req.InstanceID = h.strp("instance")
	meta := h.str("meta", "")
	if n := h.int("meta-size", -1); n >= 0 {
		meta = strings.Repeat("x", int(n))
	}
	byTopic := map[string]*kmsg.OffsetCommitRequestTopic{}
	var order []string
	for _, tpo := range h.list("offsets") {
		tp, o, _ := strings.Cut(tpo, "=")
		t, p, _ := strings.Cut(tp, "/")
		pn, _ := strconv.Atoi(p)
		on, _ := strconv.ParseInt(o, 10, 64)
		rt := byTopic[t]
		if rt == nil {
			v := kmsg.NewOffsetCommitRequestTopic()
			rt = &v
			rt.Topic = t
			byTopic[t] = rt
			order = append(order, t)
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = int32(pn), on, int32(h.int("epoch", -1))
		m := meta
		rp.Metadata = &m
		if big := h.str("big", ""); big == tp {
			m2 := strings.Repeat("x", h.cfg.OffsetMetadataMaxBytes+1)
			rp.Metadata = &m2
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	for _, t := range order {
		req.Topics = append(req.Topics, *byTopic[t])
	}
	h.step(req)
}

// txnCommit is a TxnOffsetCommit: pid, pepoch, txn (transactional id),
// gen, member, instance, offsets=t/0=5,...
func (h *harness) txnCommit() {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = int16(h.int("v", 5))
	req.TransactionalID = h.str("txn", "tx")
	req.Group, req.MemberID, req.Generation = h.str("g", "g"), h.long(h.str("member", "")), int32(h.int("gen", -1))
	req.ProducerID, req.ProducerEpoch = h.int("pid", 1), int16(h.int("pepoch", 0))
	req.InstanceID = h.strp("instance")
	meta := h.str("meta", "")
	if n := h.int("meta-size", -1); n >= 0 {
		meta = strings.Repeat("x", int(n))
	}
	byTopic := map[string]*kmsg.TxnOffsetCommitRequestTopic{}
	var order []string
	for _, tpo := range h.list("offsets") {
		tp, o, _ := strings.Cut(tpo, "=")
		t, p, _ := strings.Cut(tp, "/")
		pn, _ := strconv.Atoi(p)
		on, _ := strconv.ParseInt(o, 10, 64)
		rt := byTopic[t]
		if rt == nil {
			v := kmsg.NewTxnOffsetCommitRequestTopic()
			rt = &v
			rt.Topic = t
			byTopic[t] = rt
			order = append(order, t)
		}
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = int32(pn), on, int32(h.int("epoch", -1))
		m := meta
		rp.Metadata = &m
		rt.Partitions = append(rt.Partitions, rp)
	}
	for _, t := range order {
		req.Topics = append(req.Topics, *byTopic[t])
	}
	h.step(req)
}

func (h *harness) fetch() {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = int16(h.int("v", 9))
	req.RequireStable = h.str("stable", "false") == "true"
	groups := h.list("groups")
	if groups == nil {
		groups = []string{h.str("g", "g")}
	}
	parts := h.partitions("topics")
	_, hasTopics := h.arg("topics")
	if req.Version < 8 {
		req.Group = groups[0]
		if hasTopics {
			req.Topics = []kmsg.OffsetFetchRequestTopic{}
			for _, t := range sortedKeys(parts) {
				rt := kmsg.NewOffsetFetchRequestTopic()
				rt.Topic, rt.Partitions = t, parts[t]
				req.Topics = append(req.Topics, rt)
			}
		}
		h.step(req)
		return
	}
	for _, g := range groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		if m, ok := h.arg("member"); ok {
			rg.MemberID, rg.MemberEpoch = &m, int32(h.int("epoch", -1))
		}
		if hasTopics {
			rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
			for _, t := range sortedKeys(parts) {
				rt := kmsg.NewOffsetFetchRequestGroupTopic()
				rt.Topic, rt.Partitions = t, parts[t]
				rg.Topics = append(rg.Topics, rt)
			}
		}
		req.Groups = append(req.Groups, rg)
	}
	h.step(req)
}

// consumerAssignment encodes t/0/1+u/2 as the consumer protocol's
// assignment.
func consumerAssignment(spec string) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	for _, part := range strings.Split(spec, "+") {
		fields := strings.Split(part, "/")
		t := kmsg.NewConsumerMemberAssignmentTopic()
		t.Topic = fields[0]
		for _, f := range fields[1:] {
			n, _ := strconv.Atoi(f)
			t.Partitions = append(t.Partitions, int32(n))
		}
		a.Topics = append(a.Topics, t)
	}
	return a.AppendTo(nil)
}
