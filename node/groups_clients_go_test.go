package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
)

// TestGroupClientsGo: sarama's ConsumerGroup and kafka-go's Reader with a
// GroupID, each through groupScenario on one 3-node cluster.
func TestGroupClientsGo(t *testing.T) {
	nodes, bootstrap := startGroupCluster(t)
	for _, gc := range []groupClient{saramaClient, kafkaGoClient} {
		t.Run(gc.name, func(t *testing.T) { groupScenario(t, nodes, bootstrap, gc) })
	}
}

// saramaClient: sarama's ConsumerGroup (classic protocol, range
// assignor), marking each message after handing it on and committing
// marks every 200 ms and when it closes.
var saramaClient = groupClient{name: "sarama", start: func(t *testing.T, bootstrap []string, group, topic, id string, out chan<- consumed) clientMember {
	cfg := sarama.NewConfig()
	cfg.ClientID = "sarama-" + id
	cfg.Version = sarama.V3_0_0_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 10 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cfg.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cg, err := sarama.NewConsumerGroup(bootstrap, group, cfg)
	if err != nil {
		t.Fatalf("sarama %s: %v", id, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		h := saramaHandler{id: id, out: out}
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return stopFunc(func(t *testing.T) {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sarama %s: %v", id, err)
		}
		if err := cg.Close(); err != nil {
			t.Fatalf("sarama %s close: %v", id, err)
		}
	})
}}

type saramaHandler struct {
	id  string
	out chan<- consumed
}

func (saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-c.Messages():
			if !ok {
				return nil
			}
			h.out <- consumed{member: h.id, partition: m.Partition, offset: m.Offset, value: string(m.Value)}
			s.MarkMessage(m, "")
		case <-s.Context().Done():
			return nil
		}
	}
}

// kafkaGoClient: segmentio/kafka-go's Reader with a GroupID; ReadMessage
// commits (every 200 ms, and on Close).
var kafkaGoClient = groupClient{name: "kafka-go", start: func(t *testing.T, bootstrap []string, group, topic, id string, out chan<- consumed) clientMember {
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:           bootstrap,
		GroupID:           group,
		Topic:             topic,
		StartOffset:       kafkago.FirstOffset,
		MaxWait:           200 * time.Millisecond,
		CommitInterval:    200 * time.Millisecond,
		SessionTimeout:    10 * time.Second,
		HeartbeatInterval: 500 * time.Millisecond,
		RebalanceTimeout:  10 * time.Second,
		JoinGroupBackoff:  200 * time.Millisecond,
		ReadBackoffMin:    50 * time.Millisecond,
		ReadBackoffMax:    200 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				if ctx.Err() != nil {
					err = nil
				}
				done <- err
				return
			}
			out <- consumed{member: id, partition: int32(m.Partition), offset: m.Offset, value: string(m.Value)}
		}
	}()
	return stopFunc(func(t *testing.T) {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("kafka-go %s: %v", id, err)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("kafka-go %s close: %v", id, err)
		}
	})
}}

// stopFunc is a clientMember that stops by calling itself.
type stopFunc func(t *testing.T)

func (f stopFunc) stop(t *testing.T) { f(t) }
