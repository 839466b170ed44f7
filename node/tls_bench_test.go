package node

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkTLSListener is the cost of TLS as a client sees it: one node
// with a PLAINTEXT and an SSL listener (ssl.client.auth=none), one topic
// (RF=1), 1 KiB random values. Per listener, in the same run and
// alternating: kgo produce with acks=all (idempotent, its default) and a
// consumer reading every record back from the start (plaintext fetches
// go out with sendfile(2), TLS ones are copied and encrypted). The SSL
// cells report x-plaintext, their rate over the PLAINTEXT cell just
// before. Run with -benchtime Nx: a consume cell reads the b.N records
// its produce cell wrote.
func BenchmarkTLSListener(b *testing.B) {
	pki := newTestPKI(b)
	ssl := listen(b)
	sslPort := port(ssl)
	ssl.Close() // the node binds it
	tn := startNode(b, b.TempDir(), append([]string{
		"listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:" + sslPort + ",CONTROLLER://127.0.0.1:0",
		"advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SSL://127.0.0.1:" + sslPort + ",CONTROLLER://127.0.0.1:$CONTROLLER_PORT",
	}, pki.settings("none")...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	value := make([]byte, 1024)
	_, _ = rand.Read(value)
	seeds := map[string][]kgo.Opt{
		"PLAINTEXT": {kgo.SeedBrokers(tn.KafkaAddr())},
		"SSL":       {kgo.SeedBrokers("127.0.0.1:" + sslPort), pki.clientTLS(false)},
	}
	var plainProduce, plainConsume float64
	for _, l := range []string{"PLAINTEXT", "SSL"} {
		topic := "tls-bench-" + l
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
			if l == "PLAINTEXT" {
				plainProduce = rate
			} else if plainProduce > 0 {
				b.ReportMetric(rate/plainProduce, "x-plaintext")
			}
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
			if l == "PLAINTEXT" {
				plainConsume = rate
			} else if plainConsume > 0 {
				b.ReportMetric(rate/plainConsume, "x-plaintext")
			}
		})
	}
}
