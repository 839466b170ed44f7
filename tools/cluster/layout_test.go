package cluster

import (
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
