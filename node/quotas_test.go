package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/quorum"
)

// throttleCount counts the throttles a kgo client was told of.
type throttleCount struct{ n atomic.Int64 }

func (c *throttleCount) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		c.n.Add(1)
	}
}

// quotaRate is the byte rate the quota test's clients are held to, and
// quotaBytes what each of them moves: three times the rate, which takes
// well over quotaFloor when throttled and a few milliseconds when not.
const (
	quotaRate  = 256 << 10
	quotaBytes = 3 * quotaRate
	quotaFloor = time.Second
)

// TestClientQuotas (issue 19, KIP-13): byte-rate quotas set through
// AlterClientQuotas (kadm) are described back, and hold real clients to
// them: a franz-go producer and consumer and a librdkafka producer
// (python3-confluent-kafka) whose client ids have a quota are throttled
// (they see throttle_time_ms and take at least the time the quota
// allows), while a producer under another client id is not.
func TestClientQuotas(t *testing.T) {
	tn := startNode(t, t.TempDir(), "quota.window.num=2")
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, tn))
	createTopic(ctx, t, newClient(t, tn), "q", 1)
	name := func(s string) *string { return &s }
	rate := float64(quotaRate)
	entity := func(client string) kadm.ClientQuotaEntity {
		return kadm.ClientQuotaEntity{{Type: quorum.QuotaEntityClientID, Name: name(client)}}
	}
	altered, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: entity("slow"), Ops: []kadm.AlterClientQuotaOp{{Key: quorum.QuotaProducerByteRate, Value: rate}}},
		{Entity: entity("slow-ck"), Ops: []kadm.AlterClientQuotaOp{{Key: quorum.QuotaProducerByteRate, Value: rate}}},
		{Entity: entity("slow-reader"), Ops: []kadm.AlterClientQuotaOp{{Key: quorum.QuotaConsumerByteRate, Value: rate}}},
		{Entity: entity("bad"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: -1}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range altered {
		if (a.Err != nil) != (i == 3) {
			t.Fatalf("alteration %d (%v): %v %s", i, a.Entity, a.Err, a.ErrMessage)
		}
	}
	described, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: quorum.QuotaEntityClientID, MatchType: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(described) != 3 || *described[0].Entity[0].Name != "slow" || described[0].Values[0].Value != rate {
		t.Fatalf("described %v", described)
	}
	if testing.Verbose() {
		defer func(start time.Time) { t.Logf("took %v", time.Since(start)) }(time.Now())
	}

	produce := func(client string) (time.Duration, int64) {
		var tc throttleCount
		cl := newClient(t, tn, kgo.ClientID(client), kgo.DefaultProduceTopic("q"), kgo.WithHooks(&tc))
		start := time.Now()
		for i := 0; i < quotaBytes/1024; i += 64 {
			recs := make([]*kgo.Record, 64)
			for j := range recs {
				val := make([]byte, 1024)
				_, _ = rand.Read(val) // incompressible: the quota counts bytes as sent
				recs[j] = &kgo.Record{Value: val}
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start), tc.n.Load()
	}
	if took, throttles := produce("slow"); took < quotaFloor || throttles == 0 {
		t.Fatalf("franz-go producer under a %d B/s quota moved %d bytes in %v with %d throttles", quotaRate, quotaBytes, took, throttles)
	}
	if _, throttles := produce("fast"); throttles != 0 {
		t.Fatalf("a producer without a quota was throttled %d times", throttles)
	}
	_, body := getStatus(t, "http://"+tn.http.Addr().String()+"/metrics")
	if !strings.Contains(body, `sluice_client_quota_throttled_total{quota="producer_byte_rate"}`) ||
		strings.Contains(body, `sluice_client_quota_throttled_total{quota="consumer_byte_rate"}`) {
		t.Fatalf("/metrics after producer throttles only:\n%s", grepLines(body, "sluice_client_quota"))
	}

	var tc throttleCount
	cons := newClient(t, tn, kgo.ClientID("slow-reader"), kgo.WithHooks(&tc), kgo.FetchMaxBytes(64<<10),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"q": {0: kgo.NewOffset().AtStart()}}))
	start, read := time.Now(), 0
	for read < quotaBytes {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { read += len(r.Value) })
	}
	if took := time.Since(start); took < quotaFloor || tc.n.Load() == 0 {
		t.Fatalf("franz-go consumer under a %d B/s quota read %d bytes in %v with %d throttles", quotaRate, read, took, tc.n.Load())
	}

	took, throttles := confluentThrottled(ctx, t, tn.KafkaAddr(), "q", "slow-ck", quotaBytes/1024)
	if took < quotaFloor || throttles == 0 {
		t.Fatalf("librdkafka producer under a %d B/s quota moved %d bytes in %v with %d throttles", quotaRate, quotaBytes, took, throttles)
	}
}

// confluentThrottled produces n 1 KiB records with python3-confluent-kafka
// (librdkafka) as client id and returns how long it took and how many
// throttles librdkafka reported (throttle_cb).
func confluentThrottled(ctx context.Context, t *testing.T, bootstrap, topic, client string, n int) (time.Duration, int) {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import confluent_kafka").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3-confluent-kafka not installed, and CI is set: .ci/run must install it")
		}
		t.Skip("python3-confluent-kafka not installed")
	}
	const script = `
import os, sys, time
from confluent_kafka import Producer
bootstrap, topic, client, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
throttles = []
p = Producer({'bootstrap.servers': bootstrap, 'client.id': client, 'linger.ms': 5, 'batch.size': 65536,
              'throttle_cb': lambda ev: throttles.append(ev.throttle_time) if ev.throttle_time > 0 else None})
start = time.monotonic()
for i in range(n):
    while True:
        try:
            p.produce(topic, os.urandom(1024))
            break
        except BufferError:
            p.poll(0.1)
    p.poll(0)
left = p.flush(120)
if left:
    sys.exit("%d records not delivered" % left)
print("%.3f %d" % (time.monotonic() - start, len(throttles)))
`
	out, err := exec.CommandContext(ctx, py, "-c", script, bootstrap, topic, client, strconv.Itoa(n)).CombinedOutput()
	if err != nil {
		t.Fatalf("confluent-kafka producer: %v\n%s", err, out)
	}
	var secs float64
	var throttles int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "%f %d", &secs, &throttles); err != nil {
		t.Fatalf("confluent-kafka producer printed %q: %v", out, err)
	}
	return time.Duration(secs * float64(time.Second)), throttles
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
