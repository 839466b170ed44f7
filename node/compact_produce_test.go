package node

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCompactedTopicRefusesNullKeys: a compacted topic's leader refuses a
// record without a key with INVALID_RECORD (Kafka's rule), through kgo
// and through librdkafka (kcat); keyed records, empty keys and tombstones
// go in. Switching the live topic to delete lifts the rule at once, and
// switching it back restores it.
func TestCompactedTopicRefusesNullKeys(t *testing.T) {
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, tn))
	const topic = "table"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, topic); err != nil {
		t.Fatal(err)
	}
	// No retries: INVALID_RECORD is final, and a refused batch must not
	// hold up the next one.
	prod := newClient(t, tn, kgo.DefaultProduceTopic(topic), kgo.RecordRetries(0), kgo.MaxBufferedRecords(1))
	produce := func(key, value []byte) error {
		return prod.ProduceSync(ctx, &kgo.Record{Key: key, Value: value}).FirstErr()
	}
	if err := produce(nil, []byte("v")); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("null key to a compacted topic: %v, want INVALID_RECORD", err)
	}
	for _, r := range []struct{ key, value []byte }{{[]byte("k"), []byte("v")}, {[]byte{}, []byte("empty key")}, {[]byte("k"), nil}} {
		if err := produce(r.key, r.value); err != nil {
			t.Fatalf("key %q value %q: %v", r.key, r.value, err)
		}
	}

	alter := func(policy string) {
		t.Helper()
		alt, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: &policy}}, topic)
		if err != nil || alt[0].Err != nil {
			t.Fatalf("alter to %s: %v %+v", policy, err, alt)
		}
	}
	alter("delete")
	if err := produce(nil, []byte("after delete")); err != nil {
		t.Fatalf("null key once the topic is delete: %v", err)
	}
	alter("delete,compact")
	if err := produce(nil, []byte("v")); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("null key to a compact,delete topic: %v, want INVALID_RECORD", err)
	}

	// librdkafka: without -K every record has a null key and is refused;
	// with keys the records go in and read back with them (-Z: an empty
	// value is a tombstone).
	path := kcatPath(t)
	b := tn.KafkaAddr()
	stderr := kcatFails(ctx, t, path, []byte("no key\n"), "-P", "-b", b, "-t", topic, "-p", "0", "-X", "acks=all", "-X", "message.send.max.retries=0")
	if !strings.Contains(stderr, "Broker failed to validate record") { // librdkafka's INVALID_RECORD
		t.Fatalf("kcat null key: stderr does not name INVALID_RECORD:\n%s", stderr)
	}
	kcat(ctx, t, path, []byte("a:1\nb:2\na:\n"), "-P", "-b", b, "-t", topic, "-p", "0", "-K:", "-Z", "-X", "acks=all", "-X", "enable.idempotence=true")
	out := kcat(ctx, t, path, nil, "-C", "-b", b, "-t", topic, "-p", "0", "-o", "-3", "-e", "-q", "-Z", "-f", "%k=%s;")
	if string(out) != "a=1;b=2;a=NULL;" {
		t.Fatalf("kcat read back %q, want a=1;b=2;a=NULL;", out)
	}
}

// kcatFails runs kcat, which must fail (exit status or errors on
// standard error), and returns its standard error.
func kcatFails(ctx context.Context, t *testing.T, path string, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil && !strings.Contains(stderr.String(), "ERROR") {
		t.Fatalf("kcat %s succeeded, want a failure; stderr:\n%s", strings.Join(args, " "), stderr.String())
	}
	return stderr.String()
}
