package quorum

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// writeJSONEraDir lays out a controller directory as a build before the
// binary encoding left it: raft.db bootstrapped for one voter at addr,
// every entry JSON (index 2 on), and a JSON snapshot of snapImage at
// index snapIndex, written through raft's own stores.
func writeJSONEraDir(t *testing.T, dir, addr string, entries [][]Record, snapImage *Image, snapIndex uint64) {
	t.Helper()
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	snaps, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: serverID(1), Address: raft.ServerAddress(addr)}}}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(addr))
	rc := raft.DefaultConfig()
	rc.LocalID = serverID(1)
	if err := raft.BootstrapCluster(rc, store, store, snaps, trans, conf); err != nil {
		t.Fatal(err)
	}
	var logs []*raft.Log
	for i, recs := range entries {
		data, err := encodeJSONEntry(recs)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, &raft.Log{Index: uint64(i) + 2, Term: 1, Type: raft.LogCommand, Data: data})
	}
	if err := store.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	sink, err := snaps.Create(raft.SnapshotVersionMax, snapIndex, 1, conf, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeJSONSnapshot(sink, snapImage, snapIndex); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
}

// latestSnapshotHead returns the first bytes of the newest snapshot in dir.
func latestSnapshotHead(t *testing.T, dir string) string {
	t.Helper()
	snaps, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	list, err := snaps.List()
	if err != nil || len(list) == 0 {
		t.Fatalf("no snapshot in %s: %v", dir, err)
	}
	_, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, 4)
	if _, err := io.ReadFull(rc, head); err != nil {
		t.Fatal(err)
	}
	return string(head)
}

// TestUpgradeFromJSONEra: a controller directory written before the
// binary encoding (a JSON snapshot, JSON entries on both sides of it)
// comes up with the image those entries make, then writes binary entries
// and snapshots, and restarts on the mix: log replay over JSON and
// binary entries, then restore from its own binary snapshot.
func TestUpgradeFromJSONEra(t *testing.T) {
	h := newHarness()
	cmds := append([]Command{&SetClusterID{ClusterID: "test-cluster"}}, richImageCommands()...)
	first := planEntries(h, cmds[:9])
	snapImage, snapIndex := h.im.Clone(), uint64(len(first)+1)
	entries := append(first, planEntries(h, cmds[9:])...)
	want := imageJSON(t, h.im)

	ln := listen(t)
	n := &testNode{id: 1, dir: t.TempDir(), addr: ln.Addr().String()}
	writeJSONEraDir(t, n.dir, n.addr, entries, snapImage, snapIndex)
	last := uint64(len(entries) + 1)

	n.start(t, ln, nil, nil)
	t.Cleanup(func() { n.stop(t) })
	waitFor(t, 10*time.Second, "the upgraded node to lead and apply the JSON log", func() bool {
		return n.c.IsLeader() && n.c.fsm.AppliedIndex() >= last
	})
	if got := imageJSON(t, n.c.Image()); got != want {
		t.Fatalf("image after the upgrade differs from the JSON log's")
	}
	if n.restored.Load() != 1 {
		t.Fatalf("restored %d snapshots, want the JSON one", n.restored.Load())
	}

	// New writes are binary; a restart replays JSON and binary entries.
	propose(t, n, &CreateTopics{Topics: []TopicSpec{{Name: "after-upgrade", Partitions: 3, ReplicationFactor: 2}}})
	before, applied := n.c.fsm.ImageAt()
	n.restart(t)
	waitFor(t, 10*time.Second, "the restarted node to replay its log", func() bool {
		return n.c.IsLeader() && n.c.fsm.AppliedIndex() >= applied
	})
	if imageJSON(t, n.c.Image()) != imageJSON(t, before) {
		t.Fatal("image after a restart on a JSON+binary log differs")
	}
	if n.restored.Load() != 1 {
		t.Fatalf("restored %d snapshots, want the JSON one again", n.restored.Load())
	}

	// A binary snapshot replaces the JSON one; a restart restores it.
	if err := n.c.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if head := latestSnapshotHead(t, n.dir); head != snapshotMagic {
		t.Fatalf("the new snapshot starts %q, not the binary magic", head)
	}
	before, applied = n.c.fsm.ImageAt()
	n.restart(t)
	waitFor(t, 10*time.Second, "the node restarted on its binary snapshot to lead", func() bool {
		return n.c.IsLeader() && n.c.fsm.AppliedIndex() >= applied
	})
	if n.restored.Load() != 1 {
		t.Fatalf("restored %d snapshots, want the binary one", n.restored.Load())
	}
	if imageJSON(t, n.c.Image()) != imageJSON(t, before) {
		t.Fatal("image restored from the binary snapshot differs")
	}
}

// restart stops the node and starts it again on its directory and address.
func (n *testNode) restart(t *testing.T) {
	t.Helper()
	n.stop(t)
	n.restored.Store(0)
	n.start(t, nil, nil, nil)
}
