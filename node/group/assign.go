package group

// Topic metadata (SetTopics), subscriptions, and the server-side
// assignors of consumer groups: "uniform" (Kafka's default: balanced,
// sticky — a member keeps what it has while the assignment stays
// balanced) and "range" (per topic, contiguous ranges over the members
// subscribed to it, in member id order). A member picks one with
// ServerAssignor; the group uses the one most of its members ask for,
// else the first of group.consumer.assignors.

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"strings"
	"time"
)

// TopicInfo is what a shard needs to know of a topic.
type TopicInfo struct {
	ID         [16]byte
	Partitions int32
	// Racks are, per partition, the racks of its replicas (their
	// brokers' broker.rack), sorted; nil or empty: unknown. The
	// assignors prefer to give a partition to a member in one of them
	// (KIP-881), and a change of them makes the groups subscribed to the
	// topic assign again (Kafka 4.1, KIP-1101).
	Racks [][]string
}

// Equal reports whether t and o say the same (the driver calls SetTopics
// only when something changed).
func (t TopicInfo) Equal(o TopicInfo) bool {
	return t.ID == o.ID && t.Partitions == o.Partitions &&
		slices.EqualFunc(t.Racks, o.Racks, func(a, b []string) bool { return slices.Equal(a, b) })
}

// racks is partition p's replica racks.
func (t TopicInfo) racks(p int32) []string {
	if int(p) < len(t.Racks) {
		return t.Racks[p]
	}
	return nil
}

// rackMatch: a member in rack (known) may read partition p of t from a
// replica in its own rack.
func (t TopicInfo) rackMatch(p int32, rack string) bool {
	return rack != "" && slices.Contains(t.racks(p), rack)
}

// setTopics replaces the topic metadata and bumps the epoch of every
// consumer group whose subscribed topics changed (added, deleted,
// partitions added), which then assigns again.
func (s *Shard) setTopics(now time.Time, topics map[string]TopicInfo) {
	s.topics = make(map[string]TopicInfo, len(topics))
	s.topicNames = make(map[[16]byte]string, len(topics))
	for n, t := range topics {
		s.topics[n] = t
		s.topicNames[t.ID] = n
	}
	if !s.loaded {
		return
	}
	for _, id := range sortedKeys(s.groups) {
		g := s.groups[id]
		if g.consumer == nil || len(g.consumer.members) == 0 {
			continue
		}
		c := g.consumer
		old := c.metadataHash
		s.cgSubscriptionsChanged(g)
		if c.metadataHash != old {
			c.epoch++
			s.flushCG(&cgWrite{g: g, recs: []Record{cgMetadataRecord(c)}}, nil, nil)
		}
	}
}

// resolve is the topics m subscribes to that exist, sorted.
func (s *Shard) resolve(m *cmember) []string {
	var out []string
	for _, t := range m.topicNames {
		if _, ok := s.topics[t]; ok {
			out = append(out, t)
		}
	}
	if m.regex != "" {
		re, err := regexp.Compile("^(?:" + m.regex + ")$") // Java's matches(): the whole name
		if err == nil {
			for t := range s.topics {
				if re.MatchString(t) && !slices.Contains(m.topicNames, t) {
					out = append(out, t)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// cgSubscriptionsChanged recomputes the group's subscribed topic names
// (for offset retention and OffsetDelete) and its metadata hash.
func (s *Shard) cgSubscriptionsChanged(g *group) {
	c := g.consumer
	g.subscribed = map[string]bool{}
	for _, m := range c.members {
		for _, t := range s.resolve(m) {
			g.subscribed[t] = true
		}
	}
	c.metadataHash = s.subscriptionHash(c)
}

func (s *Shard) subscriptionHash(c *cgroup) int64 {
	set := map[string]bool{}
	for _, m := range c.members {
		for _, t := range s.resolve(m) {
			set[t] = true
		}
	}
	h := fnv.New64a()
	for _, t := range sortedKeys(set) {
		info := s.topics[t]
		h.Write([]byte(t))
		h.Write(info.ID[:])
		h.Write([]byte{byte(info.Partitions >> 24), byte(info.Partitions >> 16), byte(info.Partitions >> 8), byte(info.Partitions)})
		for p, racks := range info.Racks {
			if len(racks) > 0 {
				fmt.Fprintf(h, "|%d:%s", p, strings.Join(racks, ","))
			}
		}
	}
	return int64(h.Sum64())
}

// cgAssign computes the target assignment at the group epoch and writes
// the members' targets that changed.
func (s *Shard) cgAssign(g *group, w *cgWrite) {
	c := g.consumer
	votes := map[string]int{}
	for _, m := range c.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	name := ""
	if len(s.cfg.ConsumerAssignors) > 0 {
		name = s.cfg.ConsumerAssignors[0]
	}
	for _, a := range s.cfg.ConsumerAssignors {
		if votes[a] > votes[name] {
			name = a
		}
	}
	subs := map[string][]string{}
	rack := map[string]string{}
	for _, m := range c.members {
		subs[m.id] = s.resolve(m)
		rack[m.id] = m.rackID
	}
	var next map[string]tps
	if name == "range" {
		next = s.assignRange(subs, rack)
	} else {
		next = s.assignUniform(subs, rack, c.target)
	}
	c.assignorUsed = name
	for _, id := range sortedKeys(next) {
		if old, ok := c.target[id]; !ok || !equalTPs(old, next[id]) {
			c.target[id] = next[id]
			w.add(cgTargetMemberRecord(c, id))
		}
	}
	c.assignmentEpoch = c.epoch
	w.add(cgTargetMetadataRecord(c))
}

// assignRange is the range assignor: per topic, the members subscribed to
// it in id order get contiguous ranges, the first ones one more. With
// racks (KIP-881, as Kafka's RangeAssignor does it) each member first
// takes, up to its count, the lowest partitions with a replica in its
// rack, then the members fill their counts with the lowest partitions
// left, in id order; without racks that is the contiguous ranges.
func (s *Shard) assignRange(subs map[string][]string, rack map[string]string) map[string]tps {
	out := map[string]tps{}
	byTopic := map[string][]string{}
	for _, id := range sortedKeys(subs) {
		out[id] = tps{}
		for _, t := range subs[id] {
			byTopic[t] = append(byTopic[t], id)
		}
	}
	for t, ms := range byTopic {
		info := s.topics[t]
		n, k := int(info.Partitions), len(ms)
		quota := make([]int, k)
		for i := range ms {
			quota[i] = n / k
			if i < n%k {
				quota[i]++
			}
		}
		taken := make([]bool, n)
		give := func(i, p int) {
			out[ms[i]][info.ID] = append(out[ms[i]][info.ID], int32(p))
			taken[p] = true
			quota[i]--
		}
		for i, id := range ms {
			for p := 0; p < n && quota[i] > 0; p++ {
				if !taken[p] && info.rackMatch(int32(p), rack[id]) {
					give(i, p)
				}
			}
		}
		p := 0
		for i := range ms {
			for ; quota[i] > 0 && p < n; p++ {
				if !taken[p] {
					give(i, p)
				}
			}
		}
		for _, id := range ms {
			slices.Sort(out[id][info.ID])
		}
	}
	return out
}

// assignUniform is the uniform assignor: partitions stay with their
// current owner while it is subscribed, the others go to the eligible
// member with the fewest, then partitions move from the most loaded to
// the least loaded eligible member until no two eligible members differ
// by more than one. With racks (KIP-881), among the members a partition
// could go to with the fewest, one in a rack of its replicas is taken;
// a move prefers a partition outside its owner's rack, and a member in
// its rack; stickiness comes first (an owner keeps its partitions
// whatever their racks).
func (s *Shard) assignUniform(subs map[string][]string, rack map[string]string, prev map[string]tps) map[string]tps {
	type part struct {
		topic string
		id    [16]byte
		p     int32
	}
	members := sortedKeys(subs)
	eligible := map[string]map[string]bool{}
	var parts []part
	seen := map[string]bool{}
	for _, m := range members {
		eligible[m] = map[string]bool{}
		for _, t := range subs[m] {
			eligible[m][t] = true
			if !seen[t] {
				seen[t] = true
				info := s.topics[t]
				for p := int32(0); p < info.Partitions; p++ {
					parts = append(parts, part{t, info.ID, p})
				}
			}
		}
	}
	slices.SortFunc(parts, func(a, b part) int {
		if a.topic != b.topic {
			if a.topic < b.topic {
				return -1
			}
			return 1
		}
		return int(a.p - b.p)
	})
	owner := map[part]string{}
	count := map[string]int{}
	for _, m := range members {
		count[m] = 0
	}
	var free []part
	for _, pt := range parts {
		kept := false
		for _, m := range members {
			if eligible[m][pt.topic] && hasTP(prev[m], pt.id, pt.p) {
				owner[pt], kept = m, true
				count[m]++
				break
			}
		}
		if !kept {
			free = append(free, pt)
		}
	}
	match := func(pt part, m string) bool { return s.topics[pt.topic].rackMatch(pt.p, rack[m]) }
	least := func(pt part, except string) string {
		best := ""
		for _, m := range members {
			if m == except || !eligible[m][pt.topic] {
				continue
			}
			if best == "" || count[m] < count[best] || (count[m] == count[best] && match(pt, m) && !match(pt, best)) {
				best = m
			}
		}
		return best
	}
	for _, pt := range free {
		if m := least(pt, ""); m != "" {
			owner[pt] = m
			count[m]++
		}
	}
	for moved := true; moved; {
		moved = false
		// Partitions outside their owner's rack move first, then the
		// last ones (members keep their first).
		for _, offRack := range []bool{true, false} {
			for i := len(parts) - 1; i >= 0; i-- {
				pt := parts[i]
				from := owner[pt]
				if offRack && match(pt, from) {
					continue
				}
				if to := least(pt, from); to != "" && count[from]-count[to] > 1 {
					owner[pt] = to
					count[from]--
					count[to]++
					moved = true
				}
			}
		}
	}
	out := map[string]tps{}
	for _, m := range members {
		out[m] = tps{}
	}
	for _, pt := range parts {
		if m, ok := owner[pt]; ok {
			out[m][pt.id] = append(out[m][pt.id], pt.p)
		}
	}
	return out
}

func hasTP(m tps, id [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(m[id], p)
	return ok
}

func cloneTPs(m tps) tps {
	out := make(tps, len(m))
	for id, ps := range m {
		if len(ps) > 0 {
			out[id] = slices.Clone(ps)
		}
	}
	return out
}

func equalTPs(a, b tps) bool {
	n := 0
	for id, ps := range a {
		if len(ps) == 0 {
			continue
		}
		n++
		if !slices.Equal(ps, b[id]) {
			return false
		}
	}
	for _, ps := range b {
		if len(ps) > 0 {
			n--
		}
	}
	return n == 0
}

func intersects(a, b tps) bool {
	for id, ps := range a {
		for _, p := range ps {
			if hasTP(b, id, p) {
				return true
			}
		}
	}
	return false
}

// splitTPs is what of a is in target (keep) and what is not (revoke).
func splitTPs(a, target tps) (keep, revoke tps) {
	keep, revoke = tps{}, tps{}
	for id, ps := range a {
		for _, p := range ps {
			if hasTP(target, id, p) {
				keep[id] = append(keep[id], p)
			} else {
				revoke[id] = append(revoke[id], p)
			}
		}
	}
	return keep, revoke
}

func sortedIDs(m tps) [][16]byte {
	ids := make([][16]byte, 0, len(m))
	for id, ps := range m {
		if len(ps) > 0 {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) })
	return ids
}
