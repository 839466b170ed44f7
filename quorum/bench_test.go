package quorum

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// BenchmarkCreateTopics10k measures the scale target through a real
// single-voter controller (raft-boltdb on disk, fsync per entry): 10,000
// topics x 10 partitions x RF 3 created in batches of 100 topics per command,
// then a snapshot and a restore of that image.
//
//	go test -run '^$' -bench CreateTopics10k -benchtime 1x ./quorum/
//
// Under -tags invariants (make test's smoke run of every benchmark) the FSM
// checks the whole image after every entry, which makes 10,000 topics take
// minutes under -race: the smoke run creates 500, enough to run every step.
func BenchmarkCreateTopics10k(b *testing.B) {
	topics, batch := 10000, 100
	if invariantsOn {
		topics = 500
	}
	for i := 0; i < b.N; i++ {
		ln := benchListen(b)
		c, err := Open(Config{NodeID: 1, Dir: b.TempDir(), Listener: ln, InitialVoters: []Voter{{ID: 1, Addr: ln.Addr().String()}},
			HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
			LeaderLeaseTimeout: 100 * time.Millisecond, SnapshotThreshold: 1 << 30, ApplyTimeout: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		for !c.IsLeader() {
			<-time.After(10 * time.Millisecond)
		}
		for id := int32(1); id <= 6; id++ {
			r, err := c.Propose(ctx, &RegisterBroker{ID: id, Rack: fmt.Sprint(id % 3)})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Propose(ctx, &UnfenceBroker{ID: id, Epoch: r.(*RegisterBrokerReply).Epoch}); err != nil {
				b.Fatal(err)
			}
		}
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		for t0 := 0; t0 < topics; t0 += batch {
			cmd := &CreateTopics{}
			for j := t0; j < t0+batch; j++ {
				cmd.Topics = append(cmd.Topics, TopicSpec{Name: fmt.Sprintf("topic-%05d", j), Partitions: 10, ReplicationFactor: 3})
			}
			if _, err := c.Propose(ctx, cmd); err != nil {
				b.Fatal(err)
			}
		}
		create := time.Since(start)
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)

		start = time.Now()
		if _, err := c.Propose(ctx, &FenceBroker{ID: 1, Epoch: AnyEpoch}); err != nil {
			b.Fatal(err)
		}
		fenceDur := time.Since(start)

		start = time.Now()
		if err := c.Snapshot(); err != nil {
			b.Fatal(err)
		}
		snapDur := time.Since(start)

		im := c.Image()
		var buf bytes.Buffer
		if err := WriteSnapshot(&buf, im, 1); err != nil {
			b.Fatal(err)
		}
		size := buf.Len()
		start = time.Now()
		f := NewFSM(nil)
		if err := f.Restore(nopCloser{&buf}); err != nil {
			b.Fatal(err)
		}
		restoreDur := time.Since(start)
		if got := f.Image().PartitionCount(); got != topics*10 {
			b.Fatalf("restored %d partitions", got)
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(create.Seconds(), "create-s")
		b.ReportMetric(float64(topics*10)/create.Seconds(), "partitions/s")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "image-heap-MiB")
		b.ReportMetric(float64(fenceDur.Milliseconds()), "fence-broker-ms")
		b.ReportMetric(snapDur.Seconds(), "raft-snapshot-s")
		b.ReportMetric(float64(size)/(1<<20), "snapshot-MiB")
		b.ReportMetric(restoreDur.Seconds(), "restore-s")
	}
}

// BenchmarkFSMApply measures FSM.Apply alone (decode + replay, no Raft):
// one ISR change per entry.
func BenchmarkFSMApply(b *testing.B) {
	h := newHarness()
	for _, cmd := range []Command{
		&RegisterBroker{ID: 1}, &RegisterBroker{ID: 2}, &RegisterBroker{ID: 3},
		&UnfenceBroker{ID: 1, Epoch: AnyEpoch}, &UnfenceBroker{ID: 2, Epoch: AnyEpoch}, &UnfenceBroker{ID: 3, Epoch: AnyEpoch},
		&CreateTopics{Topics: []TopicSpec{{Name: "t", Partitions: 1, Assignments: [][]int32{{1, 2, 3}}}}},
	} {
		recs, _, err := Plan(h.im, h.pol, cmd)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range recs {
			if err := h.im.Replay(r); err != nil {
				b.Fatal(err)
			}
		}
	}
	f := NewFSM(nil)
	var buf bytes.Buffer
	_ = WriteSnapshot(&buf, h.im, 0)
	if err := f.Restore(nopCloser{&buf}); err != nil {
		b.Fatal(err)
	}
	tid := h.im.Topics["t"].ID
	entries := make([][]byte, 2)
	for i, isr := range [][]int32{{1, 2}, {1, 2, 3}} {
		entries[i], _ = EncodeEntry([]Record{&PartitionChangeRecord{TopicID: tid, Leader: 1, ISR: isr}})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		data := entries[i%2]
		// Rewrite the partition epoch so each record follows the last one.
		recs, _ := DecodeEntry(data)
		recs[0].(*PartitionChangeRecord).PartitionEpoch = int32(i + 1)
		data, _ = EncodeEntry(recs)
		if r := f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data}); r != nil {
			b.Fatal(r)
		}
	}
}

func benchListen(b *testing.B) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return ln
}

// BenchmarkProposeSerial measures one small command at a time through a
// single-voter controller (plan, raft apply with an fsync, FSM apply): the
// rate of AlterPartition-sized changes the serial proposal path sustains.
func BenchmarkProposeSerial(b *testing.B) {
	ln := benchListen(b)
	c, err := Open(Config{NodeID: 1, Dir: b.TempDir(), Listener: ln, InitialVoters: []Voter{{ID: 1, Addr: ln.Addr().String()}},
		HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
		LeaderLeaseTimeout: 100 * time.Millisecond, ApplyTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for !c.IsLeader() {
		<-time.After(10 * time.Millisecond)
	}
	ctx := context.Background()
	if _, err := c.Propose(ctx, &RegisterBroker{ID: 1}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Propose(ctx, &AllocateProducerIDs{BrokerID: 1, BrokerEpoch: AnyEpoch}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProposeParallel is BenchmarkProposeSerial with concurrent
// proposers: pipelined commands share Raft batches and fsyncs.
func BenchmarkProposeParallel(b *testing.B) {
	ln := benchListen(b)
	c, err := Open(Config{NodeID: 1, Dir: b.TempDir(), Listener: ln, InitialVoters: []Voter{{ID: 1, Addr: ln.Addr().String()}},
		HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
		LeaderLeaseTimeout: 100 * time.Millisecond, ApplyTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for !c.IsLeader() {
		<-time.After(10 * time.Millisecond)
	}
	ctx := context.Background()
	if _, err := c.Propose(ctx, &RegisterBroker{ID: 1}); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Propose(ctx, &AllocateProducerIDs{BrokerID: 1, BrokerEpoch: AnyEpoch}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
