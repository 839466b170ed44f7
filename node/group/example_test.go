package group_test

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/group"
)

// The driver's loop for one offsets partition: replay, load, step
// requests, write what Ready asks and report it with Appended.
func ExampleShard() {
	cfg := group.DefaultConfig()
	cfg.InitialRebalanceDelay = 0
	s := group.NewShard(group.Partition("my-group", 50), cfg)
	// Loading: replay the partition's records, then LoadDone.
	s.LoadDone(time.Unix(0, 0))

	now := time.Unix(1, 0)
	var log []group.Record // the partition, for this example
	drive := func(r group.Request) {
		s.TickTo(now)
		s.Step(now, r)
		for {
			rd := s.Ready()
			for _, a := range rd.Appends {
				log = append(log, a.Records...) // acks=all, in order
				s.Appended(now, a.ID, nil)
			}
			for _, resp := range rd.Responses {
				if c, ok := resp.Body.(*kmsg.OffsetCommitResponse); ok {
					fmt.Println("request", resp.ID, "commit:", kerr.ErrorForCode(c.Topics[0].Partitions[0].ErrorCode))
				}
			}
			if len(rd.Appends) == 0 {
				break
			}
		}
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 9, "my-group", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 42}}}}
	drive(group.Request{ID: 1, Body: commit})
	fmt.Println("records written:", len(log), "offset:", s.Stats().Offsets["my-group"]["orders"][0])
	fmt.Println("next due:", s.NextDue().Sub(time.Unix(0, 0)))
	// Output:
	// request 1 commit: <nil>
	// records written: 1 offset: 42
	// next due: 168h10m0s
}
