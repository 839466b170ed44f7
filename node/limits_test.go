package node

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPartitionsPerRequestLimit: sluice.max.partitions.per.request bounds
// the partitions one CreateTopics or CreatePartitions request adds in all;
// over it every topic is refused with POLICY_VIOLATION and a message that
// names the setting, and nothing is created.
func TestPartitionsPerRequestLimit(t *testing.T) {
	tn := startNode(t, t.TempDir(), "sluice.max.partitions.per.request=20")
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, tn))

	resp, err := adm.CreateTopics(ctx, 11, 1, nil, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != kerr.PolicyViolation || !strings.Contains(r.ErrMessage, "sluice.max.partitions.per.request") {
			t.Errorf("22 partitions in one request: topic %s: %v %q, want POLICY_VIOLATION naming the setting", r.Topic, r.Err, r.ErrMessage)
		}
	}
	if md, err := adm.ListTopics(ctx); err != nil || len(md.Names()) != 0 {
		t.Fatalf("topics after a refused create: %v %v", md.Names(), err)
	}
	if _, err := adm.CreateTopic(ctx, 20, 1, nil, "a"); err != nil {
		t.Fatalf("20 partitions: %v", err)
	}
	pr, err := adm.CreatePartitions(ctx, 21, "a") // adds 21
	if err != nil {
		t.Fatal(err)
	}
	if r := pr["a"]; r.Err != kerr.PolicyViolation || !strings.Contains(r.ErrMessage, "in steps of at most 20") {
		t.Fatalf("adding 21 partitions: %v %q, want POLICY_VIOLATION", r.Err, r.ErrMessage)
	}
	if pr, err := adm.CreatePartitions(ctx, 20, "a"); err != nil || pr["a"].Err != nil {
		t.Fatalf("adding 20 partitions: %v %v", err, pr["a"].Err)
	}
}

// TestConnectionLimits: a node with max.connections=4 serves four clients;
// the connections beyond are closed at once, while the four, /healthz and
// a new client after one leaves still work. A connection idle for
// connections.max.idle.ms is closed. The idle bound is 3 s so that the
// steps between two requests of the kept four (dials, two HTTP gets) fit
// in it on a loaded machine: at 400 ms one was closed as idle mid-test.
func TestConnectionLimits(t *testing.T) {
	tn := startNode(t, t.TempDir(), "max.connections=4", "connections.max.idle.ms=3000")
	var kept []net.Conn
	for range 4 {
		nc := dialKafka(t, tn)
		apiVersions(t, nc)
		kept = append(kept, nc)
	}
	for range 3 {
		nc := dialKafka(t, tn)
		var b [1]byte
		if n, err := nc.Read(b[:]); n != 0 || err == nil || isTimeoutErr(err) {
			t.Fatalf("connection over max.connections: read %d bytes, %v; want it closed", n, err)
		}
	}
	if code, _ := getStatus(t, "http://"+tn.http.Addr().String()+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz with the connections full: %d", code)
	}
	_, body := getStatus(t, "http://"+tn.http.Addr().String()+"/metrics")
	for _, want := range []string{
		`sluice_kafka_connections_refused_total{limit="max.connections",listener="PLAINTEXT"} 3`,
		`kafka_server_socket_server_metrics_connection_count{listener="PLAINTEXT"} 4`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The four are busy enough to stay open; then one leaves.
	for _, nc := range kept {
		apiVersions(t, nc)
	}
	kept[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc := dialKafka(t, tn)
		if tryAPIVersions(nc) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new connection served after one of four left")
		}
	}
	// Idle: the three others, left alone, are closed.
	for _, nc := range kept[1:] {
		_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		var b [1]byte
		if n, err := nc.Read(b[:]); n != 0 || err == nil || isTimeoutErr(err) {
			t.Fatalf("idle connection: read %d bytes, %v; want it closed", n, err)
		}
	}
}

func dialKafka(t *testing.T, tn *testNode) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", tn.KafkaAddr(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc
}

func apiVersions(t *testing.T, nc net.Conn) {
	t.Helper()
	if err := tryAPIVersions(nc); err != nil {
		t.Fatal(err)
	}
}

// tryAPIVersions does one ApiVersions v0 round trip on nc.
func tryAPIVersions(nc net.Conn) error {
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 7)); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, body); err != nil {
		return err
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(body[4:]); err != nil {
		return err
	}
	if code := resp.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
		return fmt.Errorf("ApiVersions: error %d", code)
	}
	return nil
}

func isTimeoutErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
