package node

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestGroupClientsKcat: librdkafka's balanced consumer through kcat -G
// (auto commit, a final commit and LeaveGroup on SIGTERM) through
// groupScenario on 3 nodes. kcat 1.7 sets auto.commit.interval.ms given
// with -X on the legacy topic property, which the consumer ignores, so
// it commits every 5 s (librdkafka's default): most of this test's time.
func TestGroupClientsKcat(t *testing.T) {
	path := kcatPath(t)
	nodes, bootstrap := startGroupCluster(t)
	groupScenario(t, nodes, bootstrap, groupClient{name: "kcat", start: func(t *testing.T, bootstrap []string, group, topic, id string, out chan<- consumed) clientMember {
		return startProcMember(t, id, out, path, "-b", strings.Join(bootstrap, ","), "-G", group, "-q", "-u",
			"-f", "%p %o %s\n", "-X", "client.id=kcat-"+id, "-X", "auto.offset.reset=earliest",
			"-X", "session.timeout.ms=10000", "-X", "heartbeat.interval.ms=500",
			"-X", "fetch.wait.max.ms=100", topic)
	}})
}

// TestGroupClientsPython: Debian's python3-confluent-kafka (librdkafka,
// storing offsets after printing, auto commit every 200 ms) and
// python3-kafka (kafka-python, auto commit) through groupScenario, one
// subtest each on one 3-node cluster. The scripts are in
// testdata/groups/; they run under Debian's /usr/bin/python3, which has
// the packages (.ci/run installs them).
func TestGroupClientsPython(t *testing.T) {
	py := "/usr/bin/python3"
	clients := map[string]string{"confluent-kafka": "confluent_kafka", "kafka-python": "kafka"}
	for name, module := range clients {
		if err := exec.Command(py, "-c", "import "+module).Run(); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s (python3 module %s) not installed, and CI is set: .ci/run must install it (apt-get install python3-confluent-kafka python3-kafka)", name, module)
			}
			t.Skipf("%s not installed for %s (apt-get install python3-confluent-kafka python3-kafka)", name, py)
		}
	}
	nodes, bootstrap := startGroupCluster(t)
	for _, name := range []string{"confluent-kafka", "kafka-python"} {
		script, err := filepath.Abs(filepath.Join("testdata", "groups", strings.ReplaceAll(name, "-", "_")+"_member.py"))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			groupScenario(t, nodes, bootstrap, groupClient{name: name, start: func(t *testing.T, bootstrap []string, group, topic, id string, out chan<- consumed) clientMember {
				return startProcMember(t, id, out, py, "-u", script, strings.Join(bootstrap, ","), group, topic, name+"-"+id)
			}})
		})
	}
}

// procMember is a member running as a process that prints one line
// "PARTITION OFFSET VALUE" per record it consumed.
type procMember struct {
	id       string
	cmd      *exec.Cmd
	stderr   *syncBuffer
	exited   chan struct{} // closed when the process was waited for
	err      error         // its exit, once exited is closed
	stopping atomic.Bool
}

// startProcMember starts path with args; its lines go to out.
func startProcMember(t *testing.T, id string, out chan<- consumed, path string, args ...string) *procMember {
	t.Helper()
	m := &procMember{id: id, cmd: exec.Command(path, args...), stderr: &syncBuffer{}, exited: make(chan struct{})}
	m.cmd.Stderr = m.stderr
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	t.Cleanup(func() {
		select {
		case <-m.exited:
		default:
			m.cmd.Process.Kill()
			<-m.exited
		}
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.SplitN(sc.Text(), " ", 3)
			if len(f) != 3 {
				continue
			}
			p, err1 := strconv.ParseInt(f[0], 10, 32)
			o, err2 := strconv.ParseInt(f[1], 10, 64)
			if err1 == nil && err2 == nil {
				out <- consumed{member: id, partition: int32(p), offset: o, value: f[2]}
			}
		}
		m.err = m.cmd.Wait()
		close(m.exited)
		if !m.stopping.Load() {
			out <- consumed{member: id, offset: exitedEarly, value: fmt.Sprintf("%v; stderr:\n%s", m.err, m.stderr.String())}
		}
	}()
	return m
}

// stop sends SIGTERM (the clients commit and leave the group) and waits
// for a clean exit.
func (m *procMember) stop(t *testing.T) {
	t.Helper()
	m.stopping.Store(true)
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("member %s: %v", m.id, err)
	}
	select {
	case <-m.exited:
		if m.err != nil {
			t.Fatalf("member %s exited: %v\nstderr:\n%s", m.id, m.err, m.stderr.String())
		}
	case <-time.After(30 * time.Second):
		m.cmd.Process.Kill()
		<-m.exited
		t.Fatalf("member %s did not stop within 30 s of SIGTERM\nstderr:\n%s", m.id, m.stderr.String())
	}
	if s := m.stderr.String(); strings.Contains(s, "ERROR") || strings.Contains(s, "Traceback") {
		t.Fatalf("member %s reported errors:\n%s", m.id, s)
	}
}

// syncBuffer is a bytes.Buffer safe for a process's writes and the
// test's reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
