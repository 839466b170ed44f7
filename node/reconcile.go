package node

import (
	"maps"
	"strings"

	"github.com/sluice-log/sluice/node/group"
	"github.com/sluice-log/sluice/node/replica"
	"github.com/sluice-log/sluice/node/txn"
	"github.com/sluice-log/sluice/quorum"
)

// The reconciler makes the open logs match the metadata image. Its cost
// follows what changed, not the image: OnApply notes, per applied change,
// the topics its records touched (dirtySet), and a reconciliation copies
// only those topics out of the image under the FSM's read lock
// (reconcileSome). The whole image is copied and compared
// (reconcileAll) only at the first reconciliation, after a snapshot was
// restored, and after records that may change every replica: broker
// registrations, fences, shutdowns, failed log directories, dynamic
// broker configs, and record types the reconciler does not know. At
// 1,000,000 partitions a full copy takes seconds; an ISR change costs
// one topic's copy (TestReconcileCostDoesNotGrowWithImage).

// dirtySet is what the changes applied since the last reconciliation
// touched.
type dirtySet struct {
	// full asks for a reconciliation against the whole image.
	full bool
	// names and ids are the topics touched, by name or by topic id.
	names map[string]bool
	ids   map[quorum.UUID]bool
	// removed: a topic was removed, so every replica's topic is checked.
	removed bool
	// index is the highest log index noted.
	index uint64
}

func (d *dirtySet) addName(name string) {
	if d.names == nil {
		d.names = map[string]bool{}
	}
	d.names[name] = true
}

func (d *dirtySet) addID(id quorum.UUID) {
	if d.ids == nil {
		d.ids = map[quorum.UUID]bool{}
	}
	d.ids[id] = true
}

// note adds what one applied record touched.
func (d *dirtySet) note(r quorum.Record) {
	switch r := r.(type) {
	case *quorum.PartitionChangeRecord:
		d.addID(r.TopicID)
	case *quorum.AddPartitionsRecord:
		d.addID(r.TopicID)
	case *quorum.TopicConfigRecord:
		d.addID(r.TopicID)
	case *quorum.CreateTopicRecord:
		d.addName(r.Name)
	case *quorum.RemoveTopicRecord:
		d.addName(r.Name)
		d.removed = true
	case *quorum.ProducerIDsRecord, *quorum.ScramCredentialRecord, *quorum.RemoveScramCredentialRecord,
		*quorum.ACLRecord, *quorum.RemoveACLRecord, *quorum.ClientQuotaRecord, *quorum.FeatureLevelRecord:
		// Nothing a replica or the coordinators' topic lists read.
	default:
		// Brokers (eligibility, racks), dynamic broker configs (throttle
		// rates), and any record type added later: reread everything.
		d.full = true
	}
}

// noteChange records what an applied change touched, for the next
// reconciliation. It runs on raft's FSM goroutine (quorum OnApply) and
// never blocks on anything but n.dirty, a leaf.
func (n *Node) noteChange(c quorum.Change) {
	n.dirty.Lock()
	defer n.dirty.Unlock()
	d := &n.dirty.set
	d.index = max(d.index, c.Index)
	if c.Restored {
		d.full = true
		return
	}
	for _, r := range c.Records {
		d.note(r)
	}
}

// takeDirty returns the dirty set and starts a new one.
func (n *Node) takeDirty() dirtySet {
	n.dirty.Lock()
	defer n.dirty.Unlock()
	d := n.dirty.set
	n.dirty.set = dirtySet{}
	return d
}

// reconcile makes the open logs match the metadata image: open a log for
// every partition this node hosts, update roles and epochs, delete the logs
// of removed topics. It looks at the topics changed since the last call,
// or at the whole image when that is needed (see above).
func (n *Node) reconcile() {
	n.reconcileMu.Lock()
	defer n.reconcileMu.Unlock()
	d := n.takeDirty()
	if n.logDirOffline() != nil {
		// Its replicas are offline until the node restarts: nothing to
		// open, but the metadata counts as applied here, so admin writes
		// (publish.go) do not wait for this node until their deadline.
		n.markReconciled(max(d.index, n.ctrl.AppliedIndex()))
		return
	}
	if d.full || !n.rc.primed {
		n.reconcileAll()
		return
	}
	n.reconcileSome(d)
}

// markReconciled says the logs are reconciled with the image at index
// and wakes the fetches and publish waiters (publish.go).
func (n *Node) markReconciled(index uint64) {
	n.sig.Lock()
	n.sig.reconciled = max(n.sig.reconciled, index)
	n.sig.Unlock()
	n.signal()
}

// eligibleBrokers are the alive brokers and their epochs (KIP-841/903),
// one map for every replica: it is never changed once made.
func eligibleBrokers(im *quorum.Image) map[int32]int64 {
	brokers := map[int32]int64{}
	for id, b := range im.Brokers {
		if b.Alive() {
			brokers[id] = b.Epoch
		}
	}
	return brokers
}

// reconcileAll reconciles against a copy of the whole image.
// n.reconcileMu must be held.
func (n *Node) reconcileAll() {
	im, index := n.ctrl.ImageAt()
	self := n.cfg.NodeID
	n.applyThrottles(im)
	want := map[replica.TP]bool{}
	brokers := eligibleBrokers(im)
	for _, name := range im.SortedTopics() {
		t := im.Topics[name]
		for i := range t.Partitions {
			if !contains(t.Partitions[i].Replicas, self) {
				continue
			}
			want[replica.TP{Topic: name, Partition: int32(i)}] = true
			if !n.reconcilePartition(t, i, brokers) {
				return
			}
		}
	}
	n.mu.Lock()
	for key := range n.mu.openErrs {
		if !want[key] {
			delete(n.mu.openErrs, key)
		}
	}
	n.mu.Unlock()
	for _, key := range n.rm.Keys() {
		if !want[key] {
			n.dropReplica(key)
		}
	}
	n.syncGroups(im)
	n.rc.primed, n.rc.brokers = true, brokers
	n.markReconciled(index)
}

// reconcileSome reconciles the topics of d, copied out of the image, and
// falls back to reconcileAll when the eligible brokers changed.
// n.reconcileMu must be held.
func (n *Node) reconcileSome(d dirtySet) {
	self := n.cfg.NodeID
	// Partitions whose log failed to open are retried every time.
	n.mu.RLock()
	for key := range n.mu.openErrs {
		d.addName(key.Topic)
	}
	n.mu.RUnlock()
	// After a removal every replica's topic is checked (by id: a topic
	// may have been re-created under its name).
	var local map[replica.TP]quorum.UUID
	if d.removed {
		local = map[replica.TP]quorum.UUID{}
		for _, key := range n.rm.Keys() {
			if r := n.rm.Replica(key); r != nil {
				local[key] = r.TopicID()
			}
		}
	}
	var (
		brokers        map[int32]int64
		lrate, frate   int64
		topics         []*quorum.Topic
		infos          map[string]group.TopicInfo
		gone           []string
		stale          []replica.TP
		brokersChanged bool
		seen           = map[string]bool{} // the names in topics
	)
	n.ctrl.View(func(im *quorum.Image) {
		brokers = eligibleBrokers(im)
		if brokersChanged = !maps.Equal(brokers, n.rc.brokers); brokersChanged {
			return
		}
		lrate = throttleRate(im, self, quorum.ConfigLeaderThrottleRate)
		frate = throttleRate(im, self, quorum.ConfigFollowerThrottleRate)
		add := func(t *quorum.Topic) {
			if t == nil || seen[t.Name] {
				return
			}
			if infos == nil {
				infos = map[string]group.TopicInfo{}
			}
			seen[t.Name] = true
			topics = append(topics, t.Clone())
			if !strings.HasPrefix(t.Name, "__") {
				infos[t.Name] = groupTopicInfo(im, t)
			}
		}
		for name := range d.names {
			if t := im.Topics[name]; t != nil {
				add(t)
			} else {
				gone = append(gone, name)
			}
		}
		for id := range d.ids {
			add(im.TopicByID(id))
		}
		for key, id := range local {
			if t := im.Topics[key.Topic]; t == nil || t.ID != id {
				stale = append(stale, key)
			}
		}
	})
	if brokersChanged {
		n.reconcileAll()
		return
	}
	n.rm.SetThrottleRates(lrate, frate)
	for _, key := range stale {
		n.dropReplica(key)
	}
	n.mu.Lock()
	for key := range n.mu.openErrs {
		if !seen[key.Topic] {
			delete(n.mu.openErrs, key) // its topic is gone
		}
	}
	n.mu.Unlock()
	for _, t := range topics {
		for i := range t.Partitions {
			if contains(t.Partitions[i].Replicas, self) {
				if !n.reconcilePartition(t, i, brokers) {
					return
				}
				continue
			}
			// Not (or no longer: a completed reassignment) hosted here.
			key := replica.TP{Topic: t.Name, Partition: int32(i)}
			n.mu.Lock()
			delete(n.mu.openErrs, key)
			n.mu.Unlock()
			if n.rm.Replica(key) != nil {
				n.dropReplica(key)
			}
		}
	}
	n.syncGroupsSome(topics, infos, gone)
	n.markReconciled(d.index)
}

// reconcilePartition opens, replaces (a new topic of the same name) or
// updates this node's replica of partition i of t, which names this node.
// It returns false when the node is closing. n.reconcileMu must be held.
func (n *Node) reconcilePartition(t *quorum.Topic, i int, brokers map[int32]int64) bool {
	p := &t.Partitions[i]
	key := replica.TP{Topic: t.Name, Partition: int32(i)}
	n.mu.RLock()
	closed := n.mu.closed
	n.mu.RUnlock()
	if closed {
		return false
	}
	r := n.rm.Replica(key)
	ok := r != nil
	if ok && r.TopicID() != t.ID {
		n.dropReplica(key) // a new topic of the same name
		ok = false
	}
	pc, err := n.replicaConfig(t.Configs)
	if err != nil {
		n.log.Error("node: replica config", "partition", key.String(), "err", err)
		return true
	}
	if !ok {
		r, err = n.openReplica(t, int32(i), pc)
		n.mu.Lock()
		if err != nil {
			n.mu.openErrs[key] = err
		} else {
			delete(n.mu.openErrs, key)
		}
		n.mu.Unlock()
		if err != nil {
			n.checkDiskError(err)
			n.log.Error("node: open log", "partition", key.String(), "err", err)
			return true
		}
	}
	n.applyCleanup(r, t)
	r.SetThrottle(n.throttleOf(t, int32(i)))
	r.Become(p, pc, brokers)
	return true
}

// syncGroupsSome is syncGroups for the topics one reconcileSome looked at:
// topics (copies), infos (their coordinator view, internal topics left
// out) and gone (names no longer in the image). n.reconcileMu must be held.
func (n *Node) syncGroupsSome(topics []*quorum.Topic, infos map[string]group.TopicInfo, gone []string) {
	self := n.cfg.NodeID
	for _, t := range topics {
		switch t.Name {
		case group.OffsetsTopic:
			n.coord.Sync(ledOf(t, self))
		case txn.StateTopic:
			n.txnc.Sync(ledOf(t, self))
		}
		n.topicsSeen[t.Name] = true
	}
	var deleted []string
	changed := false
	for _, name := range gone {
		switch name {
		case group.OffsetsTopic:
			n.coord.Sync(map[int32]int32{})
		case txn.StateTopic:
			n.txnc.Sync(map[int32]int32{})
		}
		if n.topicsSeen[name] {
			deleted = append(deleted, name)
			delete(n.topicsSeen, name)
		}
		_, had := n.groupTopics[name]
		changed = changed || had
	}
	if len(deleted) > 0 {
		n.coord.TopicsDeleted(deleted)
	}
	for name, ti := range infos {
		if old, ok := n.groupTopics[name]; !ok || !old.Equal(ti) {
			changed = true
		}
	}
	if !changed {
		return
	}
	// The coordinator may keep the map it was given: hand it a new one.
	m := maps.Clone(n.groupTopics)
	if m == nil {
		m = map[string]group.TopicInfo{}
	}
	for _, name := range gone {
		delete(m, name)
	}
	maps.Copy(m, infos)
	n.groupTopics = m
	n.coord.SetTopics(m)
}

// ledOf is ledPartitions for one topic: its partitions led by self, with
// their leader epochs.
func ledOf(t *quorum.Topic, self int32) map[int32]int32 {
	led := map[int32]int32{}
	for i, p := range t.Partitions {
		if p.Leader == self {
			led[int32(i)] = p.LeaderEpoch
		}
	}
	return led
}
