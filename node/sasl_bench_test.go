package node

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/kafka"
)

// BenchmarkSASLListener is the cost of SASL_SSL (TLS, then SCRAM-SHA-512)
// against PLAINTEXT on one node, in the same run: kgo produce (acks=all,
// idempotent, 1 KiB random values, RF=1) and consume cells as
// BenchmarkTLSListener's, reporting x-plaintext; and connection setup,
// one connection per iteration: TCP (+ TLS + SaslHandshake + SCRAM's two
// SaslAuthenticate round trips, the client's PBKDF2 at 4096 iterations
// included) and one ApiVersions, reported as connections/s. Run with
// -benchtime Nx.
func BenchmarkSASLListener(b *testing.B) {
	pki := newTestPKI(b)
	sl := listen(b)
	saslPort := port(sl)
	sl.Close()
	const jaas = `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`
	tn := startNode(b, b.TempDir(), append([]string{
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:" + saslPort + ",CONTROLLER://127.0.0.1:0",
		"advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SASL_SSL://127.0.0.1:" + saslPort + ",CONTROLLER://127.0.0.1:$CONTROLLER_PORT",
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"SLUICE_LISTENER_NAME_SASL_SSL_SCRAM_SHA_512_SASL_JAAS_CONFIG=" + jaas,
		"bootstrap.scram=SCRAM-SHA-512=[name=admin,password=admin-secret]",
	}, pki.settings("none")...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	value := make([]byte, 1024)
	_, _ = rand.Read(value)
	saslAddr := "127.0.0.1:" + saslPort
	seeds := map[string][]kgo.Opt{
		"PLAINTEXT": {kgo.SeedBrokers(tn.KafkaAddr())},
		"SASL_SSL":  {kgo.SeedBrokers(saslAddr), pki.clientTLS(false), scram512("admin", "admin-secret")},
	}
	var plainProduce, plainConsume, plainConnect float64
	report := func(b *testing.B, l string, rate float64, base *float64) {
		if l == "PLAINTEXT" {
			*base = rate
		} else if *base > 0 {
			b.ReportMetric(rate / *base, "x-plaintext")
		}
	}
	for _, l := range []string{"PLAINTEXT", "SASL_SSL"} {
		topic := "sasl-bench-" + l
		createTopic(ctx, b, newClient(b, tn), topic, 1)
		var n int
		b.Run(l+"/produce", func(b *testing.B) {
			cl, err := kgo.NewClient(append(seeds[l], kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.DefaultProduceTopic(topic))...)
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			rate := produceAndReport(ctx, b, cl, value)
			n += b.N
			report(b, l, rate, &plainProduce)
		})
		b.Run(l+"/consume", func(b *testing.B) {
			if b.N > n {
				b.Skipf("the topic holds %d records, fewer than b.N %d: run with -benchtime Nx", n, b.N)
			}
			b.SetBytes(int64(len(value)))
			cl, err := kgo.NewClient(append(seeds[l], kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
				kgo.FetchMaxBytes(16<<20), kgo.FetchMaxPartitionBytes(8<<20))...)
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			b.ResetTimer()
			start := time.Now()
			for got := 0; got < b.N; {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					b.Fatal(err)
				}
				got += fs.NumRecords()
			}
			rate := float64(b.N) / time.Since(start).Seconds()
			b.StopTimer()
			b.ReportMetric(rate, "records/s")
			report(b, l, rate, &plainConsume)
		})
		b.Run(l+"/connect", func(b *testing.B) {
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				var c *kafka.ClientConn
				var err error
				if l == "PLAINTEXT" {
					c, err = kafka.Dial(tn.KafkaAddr(), 10*time.Second)
				} else if c, err = kafka.DialTLS(saslAddr, 10*time.Second, &tls.Config{RootCAs: pki.ca.Pool(), ServerName: "127.0.0.1"}); err == nil {
					err = c.Authenticate(kafka.ClientSASL{Mechanism: "SCRAM-SHA-512", User: "admin", Password: "admin-secret"}, 10*time.Second)
				}
				if err != nil {
					b.Fatal(err)
				}
				req := kmsg.NewPtrApiVersionsRequest()
				if err := c.RoundTrip(req, kmsg.NewPtrApiVersionsResponse(), 10*time.Second); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
			rate := float64(b.N) / time.Since(start).Seconds()
			b.StopTimer()
			b.ReportMetric(rate, "connections/s")
			report(b, l, rate, &plainConnect)
		})
	}
}
