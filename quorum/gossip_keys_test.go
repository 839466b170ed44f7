package quorum

import (
	"bytes"
	"net"
	"strconv"
	"testing"
	"time"
)

// TestGossipKeys: with a keyring, gossip is encrypted and authenticated:
// a node without a key, or with another key, cannot join (though it
// knows the label); the key is then rotated one node at a time (new key
// accepted, then primary, then the old one dropped), each node restarted
// on its own address while the others run, and the membership stays
// whole at every step.
func TestGossipKeys(t *testing.T) {
	nodes := startQuorum(t, 1, nil)
	oldKey, newKey, wrong := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 16), bytes.Repeat([]byte{3}, 32)
	start := func(id int32, port int, keys ...[]byte) *Gossip {
		t.Helper()
		g, err := StartGossip(GossipConfig{NodeID: id, ClusterID: "cluster-a", BindAddr: "127.0.0.1", BindPort: port, Keys: keys,
			SessionTimeout: 3 * time.Second, Tick: 50 * time.Millisecond, Tune: fastGossip}, nodes[0].c)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	gs := make([]*Gossip, 3)
	ports := make([]int, 3)
	for i := range gs {
		gs[i] = start(int32(i+1), 0, oldKey)
		_, p, err := net.SplitHostPort(gs[i].Addr())
		if err != nil {
			t.Fatal(err)
		}
		ports[i], _ = strconv.Atoi(p)
	}
	t.Cleanup(func() {
		for _, g := range gs {
			g.Close()
		}
	})
	seeds := []string{gs[0].Addr()}
	for _, g := range gs[1:] {
		if _, err := g.Join(seeds); err != nil {
			t.Fatal(err)
		}
	}
	whole := func(what string) {
		t.Helper()
		waitFor(t, 30*time.Second, what, func() bool {
			for _, g := range gs {
				if g.ml.NumMembers() != 3 {
					return false
				}
			}
			return true
		})
	}
	whole("three keyed members")

	for _, keys := range [][][]byte{nil, {wrong}} {
		stranger := start(9, 0, keys...)
		if _, err := stranger.Join(seeds); err == nil {
			t.Fatalf("a node with keys %x joined", keys)
		}
		if n := gs[0].ml.NumMembers(); n != 3 {
			stranger.Close()
			t.Fatalf("members = %d after a node with keys %x tried to join", n, keys)
		}
		stranger.Close()
	}

	// Rotation, one node at a time: each step restarts every node in turn.
	for _, step := range []struct {
		name string
		keys [][]byte
	}{
		{"new key accepted", [][]byte{oldKey, newKey}},
		{"new key primary", [][]byte{newKey, oldKey}},
		{"old key dropped", [][]byte{newKey}},
	} {
		for i := range gs {
			if err := gs[i].Leave(time.Second); err != nil {
				t.Fatalf("%s: node %d leave: %v", step.name, i+1, err)
			}
			gs[i] = start(int32(i+1), ports[i], step.keys...)
			var others []string
			for j := range gs {
				if j != i {
					others = append(others, "127.0.0.1:"+strconv.Itoa(ports[j]))
				}
			}
			if _, err := gs[i].Join(others); err != nil {
				t.Fatalf("%s: node %d rejoin: %v", step.name, i+1, err)
			}
			whole(step.name + ": node " + strconv.Itoa(i+1) + " back")
		}
	}
	// The old key opens nothing now.
	late := start(9, 0, oldKey)
	defer late.Close()
	if _, err := late.Join(seeds); err == nil {
		t.Fatal("a node with the retired key joined")
	}
}

// TestGossipKeysLive: the same rotation on running nodes (SetKeys), no
// restart: after each step, newcomers keyed as nodes one step behind or
// ahead join; at the end the retired key no longer joins, and a node
// started without keys cannot be given some.
func TestGossipKeysLive(t *testing.T) {
	nodes := startQuorum(t, 1, nil)
	oldKey, newKey := bytes.Repeat([]byte{4}, 32), bytes.Repeat([]byte{5}, 24)
	var next int32 = 10
	start := func(keys ...[]byte) *Gossip {
		t.Helper()
		next++
		g, err := StartGossip(GossipConfig{NodeID: next, ClusterID: "cluster-a", BindAddr: "127.0.0.1", Keys: keys,
			SessionTimeout: 3 * time.Second, Tick: 50 * time.Millisecond, Tune: fastGossip}, nodes[0].c)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	gs := []*Gossip{start(oldKey), start(oldKey), start(oldKey)}
	t.Cleanup(func() {
		for _, g := range gs {
			g.Close()
		}
	})
	for _, g := range gs[1:] {
		if _, err := g.Join([]string{gs[0].Addr()}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "three members", func() bool { return gs[0].ml.NumMembers() == 3 })
	joins := func(keys ...[]byte) bool {
		t.Helper()
		g := start(keys...)
		defer g.Close()
		_, err := g.Join([]string{gs[0].Addr(), gs[1].Addr(), gs[2].Addr()})
		if err == nil {
			_ = g.ml.Leave(time.Second)
		}
		return err == nil
	}
	// After each step, on every node, a newcomer as a node of the step
	// before or after it would be (a rolling change mid-way) joins.
	for _, step := range []struct {
		name    string
		keys    [][]byte
		joiners [][][]byte
	}{
		{"new key accepted", [][]byte{oldKey, newKey}, [][][]byte{{oldKey}, {newKey, oldKey}}},
		{"new key primary", [][]byte{newKey, oldKey}, [][][]byte{{oldKey, newKey}, {newKey}}},
		{"old key dropped", [][]byte{newKey}, [][][]byte{{newKey, oldKey}, {newKey}}},
	} {
		for i, g := range gs {
			if err := g.SetKeys(step.keys); err != nil {
				t.Fatalf("%s: node %d: %v", step.name, i+1, err)
			}
		}
		for _, keys := range step.joiners {
			if !joins(keys...) {
				t.Fatalf("%s: a newcomer with keys %x could not join", step.name, keys)
			}
		}
	}
	if joins(oldKey) {
		t.Fatal("a newcomer with the retired key joined")
	}
	if n := gs[0].ml.NumMembers(); n < 3 {
		t.Fatalf("members = %d after the rotation", n)
	}
	plain := start()
	defer plain.Close()
	if err := plain.SetKeys([][]byte{newKey}); err == nil {
		t.Fatal("keys were set on gossip started without encryption")
	}
}
