package node

import (
	"errors"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluice-log/sluice/node/metrics"
	"github.com/sluice-log/sluice/node/replica"
	"github.com/sluice-log/sluice/node/writeback"
	"github.com/sluice-log/sluice/partition"
	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// nodeMetrics is the node's part of its metrics: the registry (built in
// Open) and the ISR change counts, which come from the metadata stream
// (OnApply) because they are events, not state.
type nodeMetrics struct {
	m   *metrics.Metrics
	isr isrChanges
	// noUnwritten is set once a log reported that the kernel cannot tell
	// what it has not written back (segment.ErrUnwrittenUnsupported): the
	// node logs it once and exports no sluice_log_unwritten_bytes.
	noUnwritten atomic.Bool
}

// apply follows one applied metadata change (the quorum's OnApply): ISR
// changes are counted, a removed topic's traffic series dropped.
func (nm *nodeMetrics) apply(ch quorum.Change, self int32) {
	nm.isr.apply(ch, self)
	for _, r := range ch.Records {
		if rt, ok := r.(*quorum.RemoveTopicRecord); ok {
			nm.m.Requests.ForgetTopic(rt.Name)
		}
	}
}

// metricsSource is the Node seen by the metrics collectors.
type metricsSource Node

var _ metrics.Source = (*metricsSource)(nil)

// newMetrics builds the registry over n; Open calls it.
func newMetrics(n *Node) *metrics.Metrics {
	return metrics.New((*metricsSource)(n), metrics.Options{
		MaxTransactionTimeout: n.cfg.Transactions.Coordinator.MaxTimeout,
	})
}

// Partitions implements metrics.Source: the replica set from the metadata
// image, the rest from each replica's partition.Status and its log.
func (s *metricsSource) Partitions(buf []metrics.PartitionStat) []metrics.PartitionStat {
	n := (*Node)(s)
	type assigned struct {
		n           int // the replication factor: the target's during a reassignment, as Kafka counts it
		reassigning bool
	}
	replicas := map[replica.TP]assigned{}
	n.ctrl.View(func(im *quorum.Image) {
		im.EachPartitionOn(n.cfg.NodeID, func(t *quorum.Topic, i int32, p *quorum.Partition) {
			replicas[replica.TP{Topic: t.Name, Partition: i}] = assigned{len(p.TargetReplicas()), p.Reassigning()}
		})
	})
	for _, r := range n.rm.Replicas() {
		as, ok := replicas[replica.TP{Topic: r.Topic(), Partition: r.Partition()}]
		if !ok {
			continue // being dropped
		}
		st := r.Status()
		l := r.Log()
		u := l.Unflushed()
		ps := metrics.PartitionStat{
			Topic: r.Topic(), Partition: r.Partition(), Leader: st.Role == partition.Leader, NotServing: st.Role == partition.Leader && st.Fenced,
			Replicas: as.n, Reassigning: as.reassigning, ISR: len(st.ISR), MinISR: r.MinInsyncReplicas(),
			LogStart: l.LogStartOffset(), LogEnd: st.LEO, HighWatermark: st.HW,
			Flushed: u.Offset, Size: l.Size(), UnflushedBytes: u.Bytes, UnflushedSince: u.Since,
		}
		ps.UnwrittenBytes, ps.UnwrittenKnown = s.unwritten(r)
		if ps.Leader {
			ps.LastStable = r.LastStable(st.HW)
			if since, _, ok := r.OpenTxnSince(); ok {
				ps.OpenTxnSince = since
			}
		}
		if ls, ok := r.Cleanup().Stat(); ok {
			ps.DirtyRatio, ps.Compacted = ls.DirtyRatio, true
		}
		for _, f := range st.Followers {
			if f.Acked >= 0 {
				ps.FollowerLag = max(ps.FollowerLag, st.LEO-f.Acked)
			}
		}
		buf = append(buf, ps)
	}
	return buf
}

// unwritten asks r's log how much of it the kernel has not written back,
// unless a log said it cannot tell. Any other error (a log closed under
// the scrape) leaves this scrape without the value.
func (s *metricsSource) unwritten(r *replica.Replica) (int64, bool) {
	if s.metrics.noUnwritten.Load() {
		return 0, false
	}
	n, err := r.Log().Unwritten()
	if errors.Is(err, segment.ErrUnwrittenUnsupported) {
		if s.metrics.noUnwritten.CompareAndSwap(false, true) {
			s.log.Info("node: sluice_log_unwritten_bytes is not exported: the kernel cannot tell what it has not written back (sluice_log_unflushed_bytes, since the last fsync, still is)", "err", err)
		}
		return 0, false
	}
	return n, err == nil
}

// Broker implements metrics.Source.
func (s *metricsSource) Broker() metrics.BrokerStat {
	shrinks, expands := s.metrics.isr.counts()
	st := metrics.BrokerStat{IsrShrinks: shrinks, IsrExpands: expands, LostOnRecovery: s.rm.LostOnRecovery()}
	if (*Node)(s).logDirOffline() != nil {
		st.OfflineLogDirs = 1
	}
	fs := s.files.Stats()
	st.SegmentFiles = metrics.SegmentFilesStat{Max: fs.Max, Open: fs.Open, Opened: fs.Opened, Evicted: fs.Evicted}
	if p := s.cleaner; p != nil {
		cs := p.Stats(nil)
		st.Cleaner = &metrics.CleanerStat{
			MaxDirtyRatio: cs.MaxDirtyRatio, RecopyRatio: cs.RecopyRatio, MaxCleanTime: cs.MaxCleanTime,
			Uncleanable: cs.Uncleanable, SinceLastRun: cs.SinceLastRun, Cleans: cs.Cleans, Failures: cs.Failures,
		}
	}
	if srv := s.srv; srv != nil {
		cs := srv.ConnStats()
		// Every Kafka listener is exported, also one nobody has used yet.
		st.Connections = cs.ByListener
		for _, l := range s.cfg.KafkaListeners {
			st.Connections[l.Name] = cs.ByListener[l.Name]
		}
		st.FailedAuthentication = maps.Clone(cs.HandshakeFailedBy)
		for l, n := range cs.SASLFailedBy {
			if st.FailedAuthentication == nil {
				st.FailedAuthentication = map[string]int64{}
			}
			st.FailedAuthentication[l] += n
		}
		st.SuccessfulAuthentication = cs.SASLAuthenticatedBy
		st.ExpiredConnectionsKilled = cs.ExpiredClosed
		st.QuotaThrottles = srv.QuotaStats()
		az := srv.AuthzStats()
		st.AuthorizationAllowed, st.AuthorizationDenied = az.Allowed, az.Denied
	}
	return st
}

// Controller implements metrics.Source.
func (s *metricsSource) Controller() metrics.ControllerStat {
	rs := s.ctrl.RaftStats()
	st := metrics.ControllerStat{Raft: metrics.RaftStat{
		State: strings.ToLower(rs.State), Leader: rs.Leader, Term: rs.Term,
		LastIndex: rs.LastIndex, CommitIndex: rs.CommitIndex, AppliedIndex: rs.AppliedIndex,
		Commits: rs.Commits, CommitTime: rs.CommitTime, RefusedConns: rs.RefusedConns,
	}}
	if st.Active = rs.State == "Leader"; !st.Active {
		return st
	}
	s.ctrl.View(func(im *quorum.Image) {
		for _, b := range im.Brokers {
			switch {
			case b.Alive():
				st.ActiveBrokers++
			case b.Fenced:
				st.FencedBrokers++
			}
		}
		st.OfflinePartitions = im.OfflinePartitions()
		for _, t := range im.Topics {
			for _, p := range t.Partitions {
				st.UncleanElections += int64(len(p.UncleanElections))
			}
		}
	})
	return st
}

// checkWriteback logs the vm.dirty_* settings and a warning for each stall
// rule they break (node/writeback); Open calls it once.
func (n *Node) checkWriteback(procRoot string) {
	s, err := writeback.Read(procRoot)
	if err != nil {
		n.log.Debug("node: cannot read the writeback settings", "err", err)
		return
	}
	mem, err := writeback.ReadMemory(procRoot)
	if err != nil {
		n.log.Debug("node: cannot read the memory size", "err", err)
		return
	}
	attrs := []any{"mem_total_bytes", mem.Total}
	for _, name := range writeback.Names {
		attrs = append(attrs, "vm."+name, s[name])
	}
	n.log.Info("node: page-cache writeback settings", attrs...)
	for _, w := range writeback.Check(s, mem.Total) {
		n.log.Warn("node: writeback: " + w)
	}
}

// isrChanges counts the ISR shrinks and expansions of the partitions this
// node leads, from the applied metadata stream: a partition_change that
// keeps this node as leader and changes the ISR's size. It keeps the last
// leader and ISR size of every partition to compare with.
type isrChanges struct {
	mu struct {
		sync.Mutex
		last             map[isrKey]isrState
		shrinks, expands int64
	}
}

type isrKey struct {
	topic     quorum.UUID
	partition int32
}

type isrState struct {
	leader int32
	isr    int
}

// apply follows one applied change (the quorum's OnApply).
func (c *isrChanges) apply(ch quorum.Change, self int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.last == nil || ch.Restored {
		c.mu.last = map[isrKey]isrState{}
	}
	if ch.Restored {
		for _, t := range ch.Image.Topics {
			for i, p := range t.Partitions {
				c.mu.last[isrKey{t.ID, int32(i)}] = isrState{p.Leader, len(p.ISR)}
			}
		}
		return
	}
	for _, r := range ch.Records {
		switch r := r.(type) {
		case *quorum.CreateTopicRecord:
			for i, p := range r.Partitions {
				c.mu.last[isrKey{r.ID, int32(i)}] = isrState{p.Leader, len(p.ISR)}
			}
		case *quorum.PartitionChangeRecord:
			k := isrKey{r.TopicID, r.Partition}
			prev, ok := c.mu.last[k]
			if ok && prev.leader == self && r.Leader == self {
				switch {
				case len(r.ISR) < prev.isr:
					c.mu.shrinks++
				case len(r.ISR) > prev.isr:
					c.mu.expands++
				}
			}
			c.mu.last[k] = isrState{r.Leader, len(r.ISR)}
		case *quorum.RemoveTopicRecord:
			for k := range c.mu.last {
				if k.topic == r.ID {
					delete(c.mu.last, k)
				}
			}
		}
	}
}

func (c *isrChanges) counts() (shrinks, expands int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.shrinks, c.mu.expands
}

var _ metrics.GroupSource = (*metricsSource)(nil)

// Groups implements metrics.GroupSource from the coordinator's loaded
// shards; the lag of a committed offset is taken against the high
// watermark of the local replica of its partition, where there is one.
func (s *metricsSource) Groups() metrics.GroupStat {
	n := (*Node)(s)
	loaded, _ := n.coord.Stats()
	gs := metrics.GroupStat{ByState: map[string]int{}, ConsumerByState: map[string]int{}, OffsetCommits: n.coord.OffsetsCommitted()}
	for _, sh := range loaded {
		for state, c := range sh.Groups {
			gs.ByState[state] += c
		}
		for state, c := range sh.ConsumerGroups {
			gs.ConsumerByState[state] += c
		}
		gs.Expired += sh.Expired
		for g, topics := range sh.Offsets {
			for topic, parts := range topics {
				for p, off := range parts {
					gs.Offsets++
					if r := n.replica(topic, p); r != nil {
						gs.Lag = append(gs.Lag, metrics.GroupLag{Group: g, Topic: topic, Partition: p, Records: max(r.HighWatermark()-off, 0)})
					}
				}
			}
		}
	}
	return gs
}
