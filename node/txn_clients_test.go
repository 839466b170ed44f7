package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The transaction client matrix (issue 18's rule: every feature with
// more than one client library). franz-go's own transactions are in
// txns_test.go; here, on one 3-node cluster with RF=3, the others:
// librdkafka as python3-confluent-kafka (producer and an exactly-once
// consume-transform-produce loop) and kcat (read_committed against
// read_uncommitted), sarama (producer and read_committed consumer),
// kafka-python and kafka-go (read_committed readers: neither has a
// transactional producer).

// txnMixedTopic holds txnMixed records: franz-go's committed "c1-I",
// aborted "a-I" and committed "c2-I", txnMixedEach of each.
const (
	txnMixedTopic = "txn-mixed"
	txnMixedEach  = 30
)

// txnPython runs /usr/bin/python3 (Debian's, with the packages) on the
// script testdata/txn/script with args, skipping when module is not
// installed (failing under CI), and returns its standard output.
func txnPython(ctx context.Context, t *testing.T, module, script string, args ...string) string {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import "+module).Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 module %s not installed, and CI is set: .ci/run must install it", module)
		}
		t.Skipf("python3 module %s not installed for %s", module, py)
	}
	path, err := filepath.Abs(filepath.Join("testdata", "txn", script))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, py, append([]string{"-u", path}, args...)...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\nstdout:\n%s\nstderr:\n%s", script, args, err, out, stderr.String())
	}
	return string(out)
}

// countLines counts the lines of out by value, failing on duplicates.
func countLines(t *testing.T, what, out string) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			got[l]++
		}
	}
	for v, k := range got {
		if k != 1 {
			t.Errorf("%s: %q %d times", what, v, k)
		}
	}
	return got
}

// checkCommitted fails unless got holds exactly the committed records
// of txnMixedTopic.
func checkCommitted(t *testing.T, what string, got map[string]int) {
	t.Helper()
	for v := range got {
		if !strings.HasPrefix(v, "c1-") && !strings.HasPrefix(v, "c2-") {
			t.Errorf("%s: %q is no committed record", what, v)
		}
	}
	if len(got) != 2*txnMixedEach {
		t.Errorf("%s: %d distinct records, want %d", what, len(got), 2*txnMixedEach)
	}
}

// TestTxnClients: the transaction client matrix on 3 nodes. Each
// subtest's assertions: read_committed readers see every committed
// record once and no aborted one; read_uncommitted ones see the aborted
// ones too; the exactly-once loop's output holds each input once.
func TestTxnClients(t *testing.T) {
	c := startReplCluster(t, 3, txnSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	var seeds []string
	for _, rn := range c.nodes {
		seeds = append(seeds, rn.KafkaAddr())
	}
	bootstrap := strings.Join(seeds, ",")
	c.createTopic(ctx, txnMixedTopic, 3, nil)
	// Uncompressed: Debian's kafka-python has no snappy (franz-go's default).
	p := c.client(kgo.TransactionalID("tc-franz"), kgo.TransactionTimeout(30*time.Second),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	for _, tx := range []struct {
		prefix string
		commit bool
	}{{"c1", true}, {"a", false}, {"c2", true}} {
		if err := produceTxn(ctx, t, p, txnMixedTopic, tx.prefix, txnMixedEach, tx.commit); err != nil {
			t.Fatalf("franz-go transaction %s: %v", tx.prefix, err)
		}
	}
	// A barrier: franz-go reads every committed record, so the markers
	// are written and every partition's LSO is past the transactions.
	checkCommitted(t, "franz-go read_committed", readTopic(ctx, t, c, txnMixedTopic, kgo.ReadCommitted(), 2*txnMixedEach))

	t.Run("kcat", func(t *testing.T) {
		path := kcatPath(t)
		read := func(level string) map[string]int {
			out, err := exec.CommandContext(ctx, path, "-C", "-b", bootstrap, "-t", txnMixedTopic, "-o", "beginning", "-e", "-q",
				"-f", "%s\n", "-X", "isolation.level="+level).Output()
			if err != nil {
				t.Fatalf("kcat %s: %v", level, err)
			}
			return countLines(t, "kcat "+level, string(out))
		}
		committed, all := read("read_committed"), read("read_uncommitted")
		checkCommitted(t, "kcat read_committed", committed)
		if len(all)-len(committed) != txnMixedEach {
			t.Errorf("kcat: read_uncommitted %d records, read_committed %d: want exactly the %d aborted more",
				len(all), len(committed), txnMixedEach)
		}
	})

	// kafka-python 2.0.2 reads read_uncommitted only (no isolation_level
	// setting, no transactional producer) and hands the markers (control
	// records) to the application as records: it must see every data
	// record, aborted ones included, once.
	t.Run("kafka-python", func(t *testing.T) {
		out := txnPython(ctx, t, "kafka", "kafka_python_read.py", bootstrap, txnMixedTopic, fmt.Sprint(3*txnMixedEach))
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if !strings.HasPrefix(l, "nonprintable:") {
				lines = append(lines, l)
			}
		}
		got := countLines(t, "kafka-python", strings.Join(lines, "\n"))
		data := 0
		for v := range got {
			if strings.HasPrefix(v, "c1-") || strings.HasPrefix(v, "c2-") || strings.HasPrefix(v, "a-") {
				data++
			}
		}
		if data != 3*txnMixedEach {
			t.Errorf("kafka-python read_uncommitted: %d records, want %d: %v", data, 3*txnMixedEach, got)
		}
	})

	// kafka-go's Reader sends IsolationLevel ReadCommitted but filters
	// neither aborted records nor control batches on its side
	// (segmentio/kafka-go#1332): what the server decides, the LSO bound,
	// is what can be checked. A franz-go transaction left open on
	// txn-open: kafka-go read_committed gets the committed records before
	// it and none of the open one's; after the commit, those too.
	t.Run("kafka-go", func(t *testing.T) {
		const topic = "txn-open"
		c.createTopic(ctx, topic, 1, nil)
		op := c.client(kgo.TransactionalID("tc-open"), kgo.TransactionTimeout(60*time.Second))
		if err := produceTxn(ctx, t, op, topic, "c1", txnMixedEach, true); err != nil {
			t.Fatal(err)
		}
		if err := op.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range txnMixedEach {
			op.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "o-%d", i)}, nil)
		}
		if err := op.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: seeds, Topic: topic, Partition: 0,
			IsolationLevel: kafkago.ReadCommitted, MaxWait: 100 * time.Millisecond})
		defer r.Close()
		got := map[string]int{}
		// readQuiet reads until a 2 s wait brings nothing.
		readQuiet := func() {
			for {
				rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
				m, err := r.ReadMessage(rctx)
				rcancel()
				if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
					return
				}
				if err != nil {
					t.Fatalf("kafka-go: %v", err)
				}
				got[string(m.Value)]++
			}
		}
		prefixed := func(prefix string) (n int) {
			for v, k := range got {
				if strings.HasPrefix(v, prefix) {
					if k != 1 {
						t.Errorf("kafka-go: %q %d times", v, k)
					}
					n++
				}
			}
			return n
		}
		readQuiet()
		if c1, o := prefixed("c1-"), prefixed("o-"); c1 != txnMixedEach || o != 0 {
			t.Errorf("kafka-go read_committed, a transaction open: %d committed records (want %d), %d of the open one's (want 0)", c1, txnMixedEach, o)
		}
		if err := op.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
		readQuiet()
		if o := prefixed("o-"); o != txnMixedEach {
			t.Errorf("kafka-go read_committed after the commit: %d of its records, want %d", o, txnMixedEach)
		}
	})

	t.Run("sarama", func(t *testing.T) { saramaTxns(ctx, t, c, seeds) })

	// librdkafka's transactions: its producer commits n records "ck-c-I"
	// to txn-ck and aborts n "ck-a-I"; then its read_committed group
	// consumer reads txn-ck and a second transactional producer copies
	// each record to txn-ck-out with the consumer's offsets in the same
	// transaction (send_offsets_to_transaction). The copy holds each
	// committed record once and no aborted one.
	t.Run("confluent-kafka", func(t *testing.T) {
		const n = 200
		direct, out := "txn-ck", "txn-ck-out"
		for _, topic := range []string{direct, out} {
			c.createTopic(ctx, topic, 3, nil)
		}
		res := txnPython(ctx, t, "confluent_kafka", "confluent_kafka_txn.py", bootstrap, direct, direct, out, "ck-eos", fmt.Sprint(n))
		if !strings.HasPrefix(res, "done ") {
			t.Fatalf("confluent_kafka_txn.py: %q", res)
		}
		got := readTopic(ctx, t, c, direct, kgo.ReadCommitted(), n)
		for v, k := range got {
			if !strings.HasPrefix(v, "ck-c-") || k != 1 {
				t.Errorf("confluent-kafka producer, read_committed: %q %d times", v, k)
			}
		}
		if all := readTopic(ctx, t, c, direct, kgo.ReadUncommitted(), 2*n); len(all) != 2*n {
			t.Errorf("confluent-kafka producer, read_uncommitted: %d records, want %d with the aborted", len(all), 2*n)
		}
		got = readTopic(ctx, t, c, out, kgo.ReadCommitted(), n)
		for i := range n {
			if v := fmt.Sprintf("out-ck-c-%d", i); got[v] != 1 {
				t.Errorf("exactly-once output: %q %d times", v, got[v])
			}
		}
		if len(got) != n {
			t.Errorf("exactly-once output: %d distinct records, want the %d committed: %v", len(got), n, got)
		}
		// The offsets went in with the copies: at least past the n
		// committed records (the markers and aborted records may or
		// may not have been passed when the last copy committed).
		if committed := committedTotal(ctx, t, c, "ck-eos", direct); committed < n {
			t.Errorf("group ck-eos committed %d input offsets in its transactions, want at least %d", committed, n)
		}
	})
}

// committedTotal is the sum of group's committed offsets on topic.
func committedTotal(ctx context.Context, t *testing.T, c *replCluster, group, topic string) int64 {
	t.Helper()
	sum, _ := committedSum(ctx, t, kadm.NewClient(c.client()), group, topic)
	return sum
}

// saramaTxns: sarama's transactional producer commits one transaction
// and aborts one (BeginTxn, SendMessages, CommitTxn/AbortTxn), then one
// more that also commits a group's offsets (AddOffsetsToTxn); sarama's
// consumer with IsolationLevel ReadCommitted sees the committed records
// once and no aborted one.
func saramaTxns(ctx context.Context, t *testing.T, c *replCluster, seeds []string) {
	const topic, n = "txn-sarama", 40
	c.createTopic(ctx, topic, 3, nil)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Transaction.ID = "tc-sarama"
	cfg.Producer.Transaction.Timeout = 30 * time.Second
	cfg.Producer.Transaction.Retry.Max = 200
	cfg.Producer.Transaction.Retry.Backoff = 50 * time.Millisecond
	cfg.Net.MaxOpenRequests = 1
	cfg.Metadata.Retry.Max = 50
	prod, err := sarama.NewSyncProducer(seeds, cfg)
	if err != nil {
		t.Fatalf("sarama transactional producer: %v", err)
	}
	defer prod.Close()
	send := func(prefix string, end func() error) {
		t.Helper()
		if err := prod.BeginTxn(); err != nil {
			t.Fatalf("sarama BeginTxn %s: %v", prefix, err)
		}
		var msgs []*sarama.ProducerMessage
		for i := range n {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", prefix, i))})
		}
		if err := prod.SendMessages(msgs); err != nil {
			t.Fatalf("sarama SendMessages %s: %v", prefix, err)
		}
		if err := end(); err != nil {
			t.Fatalf("sarama end of %s: %v", prefix, err)
		}
	}
	send("c1", prod.CommitTxn)
	send("a", prod.AbortTxn)
	send("c2", func() error {
		offs := map[string][]*sarama.PartitionOffsetMetadata{topic: {{Partition: 0, Offset: 7}}}
		if err := prod.AddOffsetsToTxn(offs, "tc-sarama-group"); err != nil {
			return fmt.Errorf("AddOffsetsToTxn: %w", err)
		}
		return prod.CommitTxn()
	})

	ccfg := sarama.NewConfig()
	ccfg.Version = sarama.V3_0_0_0
	ccfg.Consumer.IsolationLevel = sarama.ReadCommitted
	ccfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	ccfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cons, err := sarama.NewConsumer(seeds, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := map[string]int{}
	for part := range int32(3) {
		pc, err := cons.ConsumePartition(topic, part, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama ConsumePartition %d: %v", part, err)
		}
	quiet:
		for {
			select {
			case m := <-pc.Messages():
				got[string(m.Value)]++
			case err := <-pc.Errors():
				t.Fatalf("sarama partition %d: %v", part, err)
			case <-time.After(2 * time.Second):
				break quiet
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			}
		}
		pc.Close()
	}
	for v, k := range got {
		if k != 1 || strings.HasPrefix(v, "a-") {
			t.Errorf("sarama read_committed: %q %d times", v, k)
		}
	}
	if len(got) != 2*n {
		t.Errorf("sarama read_committed: %d distinct records, want %d", len(got), 2*n)
	}
	adm := kadm.NewClient(c.client())
	offs, err := adm.FetchOffsets(ctx, "tc-sarama-group")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(topic, 0); !ok || o.At != 7 {
		t.Errorf("sarama AddOffsetsToTxn: group offset %+v, want 7", o)
	}
}
