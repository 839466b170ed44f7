package txn_test

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/txn"
)

// The driver's loop for one __transaction_state partition: load, step
// requests, then do what Ready asks (append, write markers, get producer
// ids) and report each outcome, until nothing is left.
func ExampleShard() {
	now := time.Unix(0, 0)
	id := "my-txn"
	s := txn.NewShard(txn.Partition(id, 50), txn.DefaultConfig())
	// Loading: replay the partition's records, then LoadDone.
	s.LoadDone(now)

	var log []txn.Record
	nextPID := int64(1000)
	drive := func() {
		for {
			rd := s.Ready()
			for _, r := range rd.Responses {
				switch b := r.Body.(type) {
				case *kmsg.InitProducerIDResponse:
					fmt.Printf("InitProducerId: %v pid=%d epoch=%d\n", kerr.ErrorForCode(b.ErrorCode), b.ProducerID, b.ProducerEpoch)
				case *kmsg.AddPartitionsToTxnResponse:
					fmt.Printf("AddPartitionsToTxn: %v\n", kerr.ErrorForCode(b.Topics[0].Partitions[0].ErrorCode))
				case *kmsg.EndTxnResponse:
					fmt.Printf("EndTxn: %v\n", kerr.ErrorForCode(b.ErrorCode))
				}
			}
			if len(rd.Appends)+len(rd.Markers) == 0 && !rd.NeedProducerIDs {
				return
			}
			if rd.NeedProducerIDs { // the controller's AllocateProducerIds
				s.ProducerIDs(now, nextPID, 1000)
				nextPID += 1000
			}
			for _, a := range rd.Appends { // acks=all, in order
				log = append(log, a.Records...)
				s.Appended(now, a.ID, nil)
			}
			for _, m := range rd.Markers { // WriteTxnMarkers to each leader
				fmt.Printf("markers: commit=%v pid=%d epoch=%d %v\n", m.Commit, m.ProducerID, m.ProducerEpoch, m.Partitions)
				s.MarkersWritten(now, m.ID, nil)
			}
		}
	}

	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.Version, initReq.TransactionalID, initReq.TransactionTimeoutMillis = 4, &id, 60000
	s.Step(now, txn.Request{ID: 1, Body: initReq})
	drive()

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID = 3, id, 1000
	topic := kmsg.NewAddPartitionsToTxnRequestTopic()
	topic.Topic, topic.Partitions = "orders", []int32{0, 1}
	add.Topics = append(add.Topics, topic)
	s.Step(now, txn.Request{ID: 2, Body: add})
	drive()

	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.Commit = 4, id, 1000, true
	s.Step(now, txn.Request{ID: 3, Body: end})
	drive()
	fmt.Printf("%d records written\n", len(log))

	// Output:
	// InitProducerId: <nil> pid=1000 epoch=0
	// AddPartitionsToTxn: <nil>
	// EndTxn: <nil>
	// markers: commit=true pid=1000 epoch=0 [{orders 0} {orders 1}]
	// 4 records written
}
