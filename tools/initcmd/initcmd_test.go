package initcmd

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/quorum"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestRandomUUID(t *testing.T) {
	out, err := run(t, "random-uuid")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := quorum.ParseUUID(strings.TrimSpace(out)); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
}

func TestFormatAndVerify(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n1")
	id := quorum.NewUUID().String()
	if _, err := meta.Verify(dir, id, 1); !errors.Is(err, meta.ErrNotFormatted) || !strings.Contains(err.Error(), "sluice init --dir") {
		t.Fatalf("unformatted: %v", err)
	}
	out, err := run(t, "--dir", dir, "--cluster-id", id, "--node-id", "1", "--initial-controllers", "1@127.0.0.1:9093,2@127.0.0.1:9094")
	if err != nil || !strings.Contains(out, "controller (Raft voter)") {
		t.Fatalf("%q %v", out, err)
	}
	m, err := meta.Verify(dir, id, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.InitialControllers) != 2 || m.InitialControllers[1] != (quorum.Voter{ID: 2, Addr: "127.0.0.1:9094"}) || !m.IsController() {
		t.Fatalf("%+v", m)
	}
	if _, err := meta.Verify(dir, "", 1); err != nil {
		t.Fatalf("any cluster: %v", err)
	}
	if _, err := meta.Verify(dir, quorum.NewUUID().String(), 1); !errors.Is(err, meta.ErrMismatch) {
		t.Fatalf("other cluster: %v", err)
	}
	if _, err := meta.Verify(dir, id, 2); !errors.Is(err, meta.ErrMismatch) {
		t.Fatalf("other node: %v", err)
	}

	// A formatted directory is refused, or left alone with --ignore-formatted.
	before, _ := os.ReadFile(filepath.Join(dir, meta.MetaFile))
	if _, err := run(t, "--dir", dir, "--cluster-id", id, "--node-id", "1", "--standalone"); !errors.Is(err, meta.ErrFormatted) {
		t.Fatalf("reformat: %v", err)
	}
	if out, err := run(t, "--dir", dir, "--cluster-id", id, "--node-id", "1", "--standalone", "--ignore-formatted"); err != nil || !strings.Contains(out, "left as is") {
		t.Fatalf("ignore-formatted: %q %v", out, err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, meta.MetaFile))
	if !bytes.Equal(before, after) {
		t.Fatal("meta.properties changed")
	}
}

func TestFormatStandaloneAndBroker(t *testing.T) {
	id := quorum.NewUUID().String()
	d1 := t.TempDir()
	if _, err := run(t, "--dir", d1, "-t", id, "--node-id", "7", "--standalone", "--controller-addr", "h:1"); err != nil {
		t.Fatal(err)
	}
	m, err := meta.ReadMeta(d1)
	if err != nil || !m.IsController() || meta.FormatControllers(m.InitialControllers) != "7@h:1" {
		t.Fatalf("%+v %v", m, err)
	}
	d2 := t.TempDir()
	out, err := run(t, "--dir", d2, "-t", id, "--node-id", "8", "--initial-controllers", "7@h:1")
	if err != nil || !strings.Contains(out, "broker") {
		t.Fatalf("%q %v", out, err)
	}
	m2, _ := meta.ReadMeta(d2)
	if m2.DirectoryID == m.DirectoryID {
		t.Fatal("directory ids repeat")
	}
}

func TestFormatRejects(t *testing.T) {
	id := quorum.NewUUID().String()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--dir", dir, "-t", "not-a-uuid", "--node-id", "1", "--standalone"},
		{"--dir", dir, "-t", id, "--standalone"},
		{"--dir", dir, "-t", id, "--node-id", "1"},
		{"--dir", dir, "-t", id, "--node-id", "1", "--standalone", "--initial-controllers", "1@h:1"},
		{"--dir", dir, "-t", id, "--node-id", "1", "--initial-controllers", "1@h"},
		{"--dir", dir, "-t", id, "--node-id", "1", "--initial-controllers", "1@h:1,1@h:2"},
		{"--dir", dir, "-t", id, "--node-id", "1", "--initial-controllers", "x@h:1"},
	} {
		if _, err := run(t, args...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, meta.MetaFile)); err == nil {
		t.Fatal("a rejected format wrote meta.properties")
	}
	if err := os.WriteFile(filepath.Join(dir, meta.MetaFile), []byte("version=9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := meta.ReadMeta(dir); !errors.Is(err, meta.ErrBadMeta) {
		t.Fatalf("bad version: %v", err)
	}
}

// TestAddScram: --add-scram writes the salted credentials, never the
// password, into bootstrap.json; a bad spec formats nothing.
func TestAddScram(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n1")
	id := quorum.NewUUID().String()
	if _, err := run(t, "--dir", dir, "--cluster-id", id, "--node-id", "1", "--standalone",
		"--add-scram", "SCRAM-SHA-256=[name=admin,password=admin-secret]",
		"--add-scram", "SCRAM-SHA-512=[name=admin,iterations=8192,password=admin-secret]"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, meta.BootstrapFile))
	if err != nil || bytes.Contains(b, []byte("admin-secret")) {
		t.Fatalf("%s %v", b, err)
	}
	recs, err := meta.ReadBootstrap(dir)
	if err != nil || len(recs) != 2 || recs[0].User != "admin" || recs[1].Mechanism != quorum.ScramSHA512 || recs[1].Credential.Iterations != 8192 {
		t.Fatalf("%+v %v", recs, err)
	}
	other := filepath.Join(t.TempDir(), "n2")
	if _, err := run(t, "--dir", other, "--cluster-id", id, "--node-id", "1", "--standalone", "--add-scram", "SCRAM-SHA-256=[password=x]"); err == nil || !strings.Contains(err.Error(), "name=USER is required") {
		t.Fatalf("no name: %v", err)
	}
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused init left %s: %v", other, err)
	}
}

// TestFormatNoInitialControllers: a replacement controller's directory
// has no initial controllers, so its node never bootstraps a quorum; the
// flag excludes the other two.
func TestFormatNoInitialControllers(t *testing.T) {
	id := quorum.NewUUID().String()
	d := t.TempDir()
	out, err := run(t, "--dir", d, "-t", id, "--node-id", "3", "--no-initial-controllers")
	if err != nil || !strings.Contains(out, "add-controller") {
		t.Fatalf("%q %v", out, err)
	}
	m, err := meta.ReadMeta(d)
	if err != nil || m.Bootstraps() || m.IsController() || m.NodeID != 3 || m.ClusterID != id {
		t.Fatalf("%+v %v: want node 3 of %s, no initial controllers", m, err, id)
	}
	if _, err := run(t, "--dir", t.TempDir(), "-t", id, "--node-id", "3", "--no-initial-controllers", "--standalone"); err == nil {
		t.Fatal("--no-initial-controllers with --standalone accepted")
	}
}
