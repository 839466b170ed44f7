package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzSeeds are records of every kind the shard writes, and a v0 value.
func fuzzSeeds() [][2][]byte {
	ongoing := metaRecord("x", meta{pid: 7, epoch: 3, lastPid: 5, timeout: time.Minute, state: Ongoing,
		parts: []TopicPartition{{"t", 0}, {"t", 2}, {"u", 1}}, start: t0, updated: t0.Add(time.Second)})
	empty := metaRecord("y", meta{pid: 8, epoch: 0, lastPid: -1, timeout: time.Second, state: Empty, updated: t0})
	prepared := metaRecord("z", meta{pid: 9, epoch: 32767, lastPid: -1, timeout: time.Second, state: PrepareAbort,
		parts: []TopicPartition{{"t", 0}}, start: t0, updated: t0})
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.TimeoutMillis, v.State, v.StartTimestamp, v.LastUpdateTimestamp = 0, 1, 1000, 4, 5, 6
	v0 := Record{Key: txnKey("w"), Value: v.AppendTo(nil)}
	return [][2][]byte{{ongoing.Key, ongoing.Value}, {empty.Key, empty.Value}, {prepared.Key, prepared.Value},
		{v0.Key, v0.Value}, {ongoing.Key, nil}}
}

// FuzzReplay feeds Replay any key and value (or a tombstone): it never
// panics; a record it takes comes back the same when the shard writes it
// again; and the loaded shard serves requests and runs its clock without
// panicking (with -tags invariants, without breaking one).
func FuzzReplay(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s[0], s[1], s[1] == nil)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		cfg := DefaultConfig()
		cfg.StatePartitions = 1
		s := NewShard(0, cfg)
		if err := s.Replay(0, key, value); err != nil {
			return
		}
		again := NewShard(0, cfg)
		for _, id := range sortedIDs(s.txns) {
			r := metaRecord(id, s.txns[id].meta)
			if err := again.Replay(0, r.Key, r.Value); err != nil {
				t.Fatalf("own record does not replay: %v", err)
			}
		}
		if a, b := persisted(s), persisted(again); a != b {
			t.Fatalf("round trip differs:\n%s\n---\n%s", a, b)
		}
		s.LoadDone(t0)
		rd := s.Ready()
		for _, m := range rd.Markers {
			s.MarkersWritten(t0, m.ID, nil)
		}
		for _, id := range sortedIDs(s.txns) {
			tx := s.txns[id]
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, tx.pid, tx.epoch
			s.Step(t0, Request{ID: 1, Body: req})
			init := kmsg.NewPtrInitProducerIDRequest()
			init.TransactionalID, init.TransactionTimeoutMillis = &id, 1000
			s.Step(t0, Request{ID: 2, Body: init})
		}
		s.TickTo(t0.Add(30 * 24 * time.Hour))
		s.NextDue()
		rd = s.Ready()
		for _, a := range rd.Appends {
			s.Appended(t0, a.ID, nil)
		}
	})
}
