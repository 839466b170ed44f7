package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The launcher's plan: ports offset by node id without collisions, the
// voters line naming every controller, the properties in Kafka's keys.
func TestLayout(t *testing.T) {
	l := newLayout("/c", "id", 3, KafkaPort)
	seen := map[string]int32{}
	for _, n := range l.Nodes {
		for _, a := range []string{n.Kafka, n.Controller, n.Gossip, n.HTTP} {
			if other, dup := seen[a]; dup {
				t.Fatalf("address %s used by nodes %d and %d", a, other, n.ID)
			}
			seen[a] = n.ID
		}
	}
	if got, want := l.Nodes[0].Kafka, "127.0.0.1:9192"; got != want {
		t.Fatalf("node 1 Kafka on %s, want %s", got, want)
	}
	if got := l.voters(); got != "1@127.0.0.1:9193,2@127.0.0.1:9293,3@127.0.0.1:9393" {
		t.Fatalf("voters %s", got)
	}
	p := l.properties(l.Nodes[1], map[string]string{"log.segment.bytes": "1048576"})
	for _, want := range []string{"node.id=2\n", "listeners=PLAINTEXT://127.0.0.1:9292,CONTROLLER://127.0.0.1:9293,GOSSIP://127.0.0.1:8146,HTTP://127.0.0.1:9844\n", "gossip.seeds=127.0.0.1:8046,127.0.0.1:8246\n", "log.segment.bytes=1048576\n", "cluster.id=id\n"} {
		if !strings.Contains(p, want) {
			t.Fatalf("properties lack %q:\n%s", want, p)
		}
	}
	if _, err := parseProps([]string{"novalue"}); err == nil {
		t.Fatal("--set without = accepted")
	}
}

// TestEphemeralWarning: a layout whose ports reach into the kernel's
// ephemeral range is warned about, with a base port that would not be.
func TestEphemeralWarning(t *testing.T) {
	rng := filepath.Join(t.TempDir(), "range")
	if err := os.WriteFile(rng, []byte("32768\t60999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if w := ephemeralWarning(newLayout(t.TempDir(), "id", 3, 29092), rng); w != "" {
		t.Errorf("base 29092: %q, want no warning", w)
	}
	w := ephemeralWarning(newLayout(t.TempDir(), "id", 3, 36092), rng)
	if !strings.Contains(w, "36192") || !strings.Contains(w, "below 31916") {
		t.Errorf("base 36092: %q, want port 36192 named and base port 31916 suggested", w)
	}
	if w := ephemeralWarning(newLayout(t.TempDir(), "id", 3, 31915), rng); w != "" {
		t.Errorf("base 31915: %q, want no warning", w)
	}
	if w := ephemeralWarning(newLayout(t.TempDir(), "id", 3, 31916), rng); w == "" {
		t.Error("base 31916: want a warning (its last HTTP port is 32768)")
	}
	if w := ephemeralWarning(newLayout(t.TempDir(), "id", 3, 36092), filepath.Join(t.TempDir(), "none")); w != "" {
		t.Errorf("no range file: %q, want no warning", w)
	}
}
