package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeTopicPartitions: franz-go's client asks for every topic a
// page at a time (response_partition_limit, next_cursor), goes on from
// the cursor, and names topics; the offline partition answers its ELR
// and last-known ELR. (Of the clients at hand only franz-go's kmsg has
// API 75: sarama 1.50, kafka-go 0.4, librdkafka 2.0 and kafka-python 2.0
// describe topics through Metadata.)
func TestDescribeTopicPartitions(t *testing.T) {
	ts := startServer(t, Options{})
	ts.broker.mu.Lock()
	p2 := &ts.broker.md.Topics[0].Partitions[2]
	p2.ELR, p2.LastKnownELR = []int32{1}, []int32{2}
	ts.broker.mu.Unlock()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ask := func(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
		t.Helper()
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit, req.Cursor = limit, cursor
		for _, tp := range topics {
			req.Topics = append(req.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: tp})
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	show := func(resp *kmsg.DescribeTopicPartitionsResponse) string {
		s := ""
		for _, tp := range resp.Topics {
			s += fmt.Sprintf("%s:%d[", *tp.Topic, tp.ErrorCode)
			for _, p := range tp.Partitions {
				s += fmt.Sprintf(" %d:l%d isr%v elr%v lke%v", p.Partition, p.LeaderID, p.ISR, p.EligibleLeaderReplicas, p.LastKnownELR)
			}
			s += " ] "
		}
		if c := resp.NextCursor; c != nil {
			s += fmt.Sprintf("next=%s/%d", c.Topic, c.Partition)
		}
		return s
	}
	unknown := kerr.UnknownTopicOrPartition.Code
	for _, c := range []struct {
		name string
		resp *kmsg.DescribeTopicPartitionsResponse
		want string
	}{
		{"every topic, two partitions a page", ask(2, nil),
			"__consumer_offsets:0[ 0:l1 isr[1] elr[] lke[] ] orders:0[ 0:l1 isr[1 2] elr[] lke[] ] next=orders/1"},
		{"from the cursor", ask(0, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "orders", Partition: 1}),
			"orders:0[ 1:l2 isr[2] elr[] lke[] 2:l-1 isr[] elr[1] lke[2] ] "},
		{"a page ending with a topic", ask(1, nil),
			"__consumer_offsets:0[ 0:l1 isr[1] elr[] lke[] ] next=orders/0"},
		{"named, one unknown", ask(0, nil, "orders", "nope"),
			fmt.Sprintf("nope:%d[ ] orders:0[ 0:l1 isr[1 2] elr[] lke[] 1:l2 isr[2] elr[] lke[] 2:l-1 isr[] elr[1] lke[2] ] ", unknown)},
	} {
		if got := show(c.resp); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}
