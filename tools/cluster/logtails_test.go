package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogTails: a start failure carries each node's last log lines, since
// the caller's temporary directory (and so the log) may be gone by the time
// anyone reads the error.
func TestLogTails(t *testing.T) {
	dir := t.TempDir()
	var l Layout
	for i, body := range []string{"a\nb\nc\nlisten tcp 127.0.0.1:9192: bind: address already in use\n", ""} {
		p := filepath.Join(dir, "node.log"+string(rune('1'+i)))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		l.Nodes = append(l.Nodes, Node{ID: int32(i + 1), LogFile: p})
	}
	l.Nodes = append(l.Nodes, Node{ID: 3, LogFile: filepath.Join(dir, "missing")})
	got := logTails(l, 2)
	for _, want := range []string{"node 1's last log lines:\n  c\n  listen tcp 127.0.0.1:9192: bind: address already in use", "node 2's last log lines:"} {
		if !strings.Contains(got, want) {
			t.Errorf("logTails = %q, want it to contain %q", got, want)
		}
	}
	if strings.Contains(got, "\n  b\n") || strings.Contains(got, "node 3") {
		t.Errorf("logTails = %q: more than 2 lines, or a node without a log", got)
	}
}
