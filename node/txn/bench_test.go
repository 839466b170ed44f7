package txn

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkTransaction is one transaction's coordinator work (add two
// partitions, commit, markers, completion, with every Append and NextDue
// as a driver would call them) in a shard holding ids other idle ids.
func BenchmarkTransaction(b *testing.B) {
	for _, ids := range []int{1, 1000, 10000} {
		b.Run(fmt.Sprintf("ids=%d", ids), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.StatePartitions = 1
			s := NewShard(0, cfg)
			for i := 0; i < ids; i++ {
				r := metaRecord(fmt.Sprintf("idle-%d", i), meta{pid: int64(10000 + i), lastPid: -1, timeout: time.Minute, updated: t0})
				if err := s.Replay(0, r.Key, r.Value); err != nil {
					b.Fatal(err)
				}
			}
			s.LoadDone(t0)
			s.ProducerIDs(t0, 1, 1)
			id := "x"
			settle := func() {
				for {
					rd := s.Ready()
					if len(rd.Appends)+len(rd.Markers) == 0 {
						return
					}
					for _, a := range rd.Appends {
						s.Appended(t0, a.ID, nil)
					}
					for _, m := range rd.Markers {
						s.MarkersWritten(t0, m.ID, nil)
					}
					s.NextDue()
				}
			}
			init := kmsg.NewPtrInitProducerIDRequest()
			init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 5, &id, 60000
			s.Step(t0, Request{ID: 1, Body: init})
			settle()
			add := kmsg.NewPtrAddPartitionsToTxnRequest()
			add.Version, add.TransactionalID, add.ProducerID = 3, id, 1
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = "t", []int32{0, 1}
			add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{rt}
			end := kmsg.NewPtrEndTxnRequest()
			end.Version, end.TransactionalID, end.ProducerID, end.Commit = 4, id, 1, true
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.Step(t0, Request{ID: 2, Body: add})
				s.NextDue()
				settle()
				s.Step(t0, Request{ID: 3, Body: end})
				s.NextDue()
				settle()
			}
			if st := s.Stats(); st.Committed != int64(b.N) {
				b.Fatalf("%d commits for %d transactions", st.Committed, b.N)
			}
		})
	}
}
