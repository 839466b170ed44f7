package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kcatPath finds kcat (Debian package kcat; older releases call it
// kafkacat) or skips the test: a developer machine may not have it. In CI
// (env CI set) .ci/run installs it, so a missing kcat fails the test
// rather than letting it pass by skipping.
func kcatPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"kcat", "kafkacat"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("kcat not installed, and CI is set: .ci/run must install it (apt-get install kcat)")
	}
	t.Skip("kcat not installed (apt-get install kcat; .ci/run installs it): skipping the librdkafka client test")
	return ""
}

// kcat runs kcat with args and stdin and returns its standard output; a
// non-zero exit fails the test with its standard error.
func kcat(ctx context.Context, t *testing.T, path string, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if s := stderr.String(); strings.Contains(s, "ERROR") || strings.Contains(s, "failed") {
		t.Fatalf("kcat %s reported errors:\n%s", strings.Join(args, " "), s)
	}
	return stdout.Bytes()
}

// TestKcat: librdkafka, through kcat, against a node on 127.0.0.1. It
// negotiates its own API versions (ApiVersions v3, Metadata up to v12,
// Fetch with sessions, ListOffsets for -o beginning, InitProducerId for
// idempotence) and turns features on by the ranges listed, which kgo does
// not exercise the same way. An idempotent acks=all lz4 producer writes n
// lines to partition 0; a consumer reads them back from the beginning to
// the end (-e), every value once and in offset order; -L lists the broker,
// the topic and its leader.
func TestKcat(t *testing.T) {
	path := kcatPath(t)
	tn := startNode(t, t.TempDir())
	ctx := testCtx(t)
	const topic, n = "kcat", 2000
	createTopic(ctx, t, newClient(t, tn), topic, 1)
	broker := tn.KafkaAddr()

	var in bytes.Buffer
	for i := range n {
		fmt.Fprintf(&in, "kcat-value-%05d\n", i)
	}
	kcat(ctx, t, path, in.Bytes(), "-P", "-b", broker, "-t", topic, "-p", "0", "-z", "lz4",
		"-X", "enable.idempotence=true", "-X", "acks=all", "-X", "linger.ms=5")

	out := kcat(ctx, t, path, nil, "-C", "-b", broker, "-t", topic, "-p", "0",
		"-o", "beginning", "-e", "-q", "-f", "%p %o %s\n")
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("kcat consumed %d records, want %d; first lines: %q", len(lines), n, lines[:min(len(lines), 5)])
	}
	for i, line := range lines {
		if want := fmt.Sprintf("0 %d kcat-value-%05d", i, i); line != want {
			t.Fatalf("record %d: %q, want %q", i, line, want)
		}
	}

	// kcat's -X enable.idempotence must really have given the batches a
	// producer id (librdkafka falls back silently, as kgo does, if
	// InitProducerId is not advertised), and -z lz4 must really have
	// compressed them: librdkafka sends uncompressed batches, saying so
	// only in a debug log, unless the broker lists Produce v0 and, for lz4,
	// FindCoordinator.
	cons := newClient(t, tn, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	fs := cons.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	fs.EachRecord(func(r *kgo.Record) {
		if r.ProducerID < 0 {
			t.Fatalf("offset %d written without a producer id: kcat's producer was not idempotent", r.Offset)
		}
		if c := r.Attrs.CompressionType(); c != 3 {
			t.Fatalf("offset %d in a batch with compression %d, want 3 (lz4)", r.Offset, c)
		}
	})

	var md struct {
		Brokers []struct {
			ID   int32  `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic      string `json:"topic"`
			Error      string `json:"error"`
			Partitions []struct {
				Partition int32 `json:"partition"`
				Leader    int32 `json:"leader"`
				Replicas  []struct {
					ID int32 `json:"id"`
				} `json:"replicas"`
				ISRs []struct {
					ID int32 `json:"id"`
				} `json:"isrs"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	raw := kcat(ctx, t, path, nil, "-L", "-J", "-b", broker, "-t", topic)
	if err := json.Unmarshal(raw, &md); err != nil {
		t.Fatalf("kcat -L -J: %v\n%s", err, raw)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].ID != 1 || md.Brokers[0].Name != broker {
		t.Errorf("kcat -L brokers %+v, want node 1 at %s", md.Brokers, broker)
	}
	if len(md.Topics) != 1 || md.Topics[0].Topic != topic || md.Topics[0].Error != "" || len(md.Topics[0].Partitions) != 1 {
		t.Fatalf("kcat -L topics %+v, want %q with one partition", md.Topics, topic)
	}
	p := md.Topics[0].Partitions[0]
	if p.Partition != 0 || p.Leader != 1 || len(p.Replicas) != 1 || len(p.ISRs) != 1 {
		t.Errorf("kcat -L partition %+v, want 0 led by node 1 with one replica in sync", p)
	}
}
