package admin

import (
	"bytes"
	"context"
	"io"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runIO runs one sluice command line with stdin as its standard input and
// returns its standard output and error apart. --timeout is 10s unless the
// arguments set it.
func runIO(t *testing.T, bootstrap, stdin string, args ...string) (string, string, error) {
	t.Helper()
	root := &cobra.Command{Use: "sluice", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(NewTopicsCommand(), NewProduceCommand(), NewConsumeCommand(), NewPerfCommand(), NewGroupsCommand())
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	args = append(args, "--bootstrap-server", bootstrap)
	if !slices.Contains(args, "--timeout") {
		args = append(args, "--timeout", "10s")
	}
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// TestProduceConsumePerfOnNode: produce (stdin and --value, keys, headers,
// a chosen partition, JSON), consume (from the beginning, at an offset,
// keys and headers, JSON, idle timeout) and perf produce|consume against a
// real node, and the errors of an unknown topic and partition.
func TestProduceConsumePerfOnNode(t *testing.T) {
	nodes, bootstrap := startCluster(t, 1)
	mustRun(t, bootstrap, "topics", "create", "cli", "--partitions", "2", "--replication-factor", "1")
	onEveryNode(t, nodes, "the new topic", func(ctx context.Context, b *kgo.Broker) bool {
		return partitionCount(ctx, b, "cli") == 2
	})
	must := func(stdin string, args ...string) (string, string) {
		t.Helper()
		out, errOut, err := runIO(t, bootstrap, stdin, args...)
		if err != nil {
			t.Fatalf("sluice %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return out, errOut
	}

	out, errOut := must("a\nb\nc\n", "produce", "cli", "--partition", "0", "--key", "k", "--header", "h=v", "--header", "h2=w")
	if out != "cli/0@0\ncli/0@1\ncli/0@2\n" || !strings.Contains(errOut, "Produced 3 records to cli") {
		t.Fatalf("produce from stdin:\n%s%s", out, errOut)
	}
	out, _ = must("", "produce", "cli", "--value", "one", "--partition", "1", "--acks", "1", "--format", "json")
	if pr := decode[ProducedRecord](t, out); pr != (ProducedRecord{Topic: "cli", Partition: 1, Offset: 0}) {
		t.Fatalf("produce --value --format json: %+v", pr)
	}

	if out, _ = must("x\n", "produce", "cli", "--partition", "1", "--acks", "0"); out != "cli/1@? (acks=0)\n" {
		t.Fatalf("produce --acks 0: %q", out)
	}
	out, errOut = must("", "consume", "cli", "--partition", "0", "--from-beginning", "--max-records", "2", "--print-key", "--print-headers")
	if out != "h:v,h2:w\tk\ta\nh:v,h2:w\tk\tb\n" || !strings.Contains(errOut, "Processed a total of 2 messages") {
		t.Fatalf("consume --print-key --print-headers:\n%q\n%s", out, errOut)
	}
	out, _ = must("", "consume", "cli", "--partition", "0", "--offset", "2", "--max-records", "1", "--format", "json")
	cr := decode[ConsumedRecord](t, out)
	if cr.Topic != "cli" || cr.Partition != 0 || cr.Offset != 2 || cr.Key == nil || *cr.Key != "k" || cr.Value != "c" ||
		len(cr.Headers) != 2 || cr.Headers[1] != (HeaderRecord{"h2", "w"}) || cr.Timestamp <= 0 {
		t.Fatalf("consume --format json: %+v", cr)
	}
	// Every partition from the beginning; no more records: stops after
	// --timeout idle.
	out, _ = must("", "consume", "cli", "--from-beginning", "--timeout", "500ms")
	if got := strings.Fields(out); len(got) != 5 || !slices.Contains(got, "one") {
		t.Fatalf("consume every partition: %q", out)
	}

	out, errOut = must("", "perf", "produce", "--topic", "cli", "--num-records", "300", "--record-size", "64", "--throughput", "1000", "--reporting-interval", "100ms")
	final := regexp.MustCompile(`(?m)^300 records sent, [0-9.]+ records/sec \([0-9.]+ MB/sec\), [0-9.]+ ms avg latency, [0-9.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99.9th.\n\z`)
	window := regexp.MustCompile(`(?m)^\d+ records sent, [0-9.]+ records/sec \([0-9.]+ MB/sec\), [0-9.]+ ms avg latency, [0-9.]+ ms max latency.$`)
	if !final.MatchString(out) || !window.MatchString(out) {
		t.Fatalf("perf produce:\n%s---\n%s", out, errOut)
	}
	out, _ = must("", "perf", "consume", "--topic", "cli", "--messages", "300")
	if lines := strings.Split(out, "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "start.time, end.time, data.consumed.in.MB") ||
		!regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}, .*, 300, `).MatchString(lines[1]) {
		t.Fatalf("perf consume:\n%s", out)
	}
	res := decode[PerfConsumeResult](t, must2(t, bootstrap, "perf", "consume", "--topic", "cli", "--messages", "305", "--format", "json"))
	if res.Messages != 305 {
		t.Fatalf("perf consume --format json: %+v", res)
	}

	// Errors: what to do about them, and a non-zero exit.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"produce", "nosuch", "--value", "x"}, "sluice topics create nosuch"},
		{[]string{"consume", "nosuch"}, "sluice topics create nosuch"},
		{[]string{"perf", "produce", "--topic", "nosuch", "--num-records", "1"}, "sluice topics create nosuch"},
		{[]string{"perf", "consume", "--topic", "nosuch", "--messages", "1"}, "sluice topics create nosuch"},
		{[]string{"produce", "cli", "--value", "x", "--partition", "7"}, "has no partition 7"},
		{[]string{"consume", "cli", "--partition", "7"}, "has no partition 7"},
		{[]string{"produce", "cli", "--value", "x", "--acks", "2"}, "want all, 1 or 0"},
		{[]string{"produce", "cli", "--value", "x", "--header", "novalue"}, "want KEY=VALUE"},
		{[]string{"perf", "consume", "--topic", "cli", "--messages", "1000", "--timeout", "500ms"}, "expected number of messages"},
	} {
		_, _, err := runIO(t, bootstrap, "", c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("sluice %s: %v, want an error with %q", strings.Join(c.args, " "), err, c.want)
		}
		t.Logf("sluice %s: %v", strings.Join(c.args, " "), err)
	}
}

// must2 is runIO that fails the test on an error and returns stdout.
func must2(t *testing.T, bootstrap string, args ...string) string {
	t.Helper()
	out, errOut, err := runIO(t, bootstrap, "", args...)
	if err != nil {
		t.Fatalf("sluice %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// TestProduceConsumePerfClusterDown: with nothing listening, each command
// fails within --timeout and says to check the cluster.
func TestProduceConsumePerfClusterDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	for _, args := range [][]string{
		{"produce", "cli", "--value", "x"},
		{"consume", "cli"},
		{"perf", "produce", "--topic", "cli", "--num-records", "1"},
		{"perf", "consume", "--topic", "cli", "--messages", "1"},
	} {
		_, _, err := runIO(t, down, "", append(args, "--timeout", "500ms")...)
		if err == nil || !strings.Contains(err.Error(), "is the cluster running?") {
			t.Errorf("sluice %s with the cluster down: %v", strings.Join(args, " "), err)
		}
		t.Logf("sluice %s: %v", args[0], err)
	}
}

// TestReadLinesStopsOnInterrupt: an interrupt ends the input even while
// the read blocks (a terminal waiting for a line).
func TestReadLinesStopsOnInterrupt(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan []byte, 1)
	done := make(chan error, 1)
	go func() { done <- readLines(ctx, pr, func(b []byte) { got <- b }) }()
	if _, err := pw.Write([]byte("first\n")); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "first" {
		t.Fatalf("line %q", b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("readLines after the interrupt: %v", err)
	}
}
