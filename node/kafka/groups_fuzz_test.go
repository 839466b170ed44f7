package kafka

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupSeeds are encoded requests of every group API, at their lowest and
// highest versions, pipelined into one stream each.
func groupSeeds() [][]byte {
	rf := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed"))
	stream := func(v func(bool) []kmsg.Request) []byte {
		var b []byte
		for _, min := range []bool{true, false} {
			for i, r := range v(min) {
				// AppendRequest sizes the frame from the start of dst:
				// one frame per call.
				b = append(b, rf.AppendRequest(nil, r, int32(i))...)
			}
		}
		return b
	}
	at := func(r kmsg.Request, min, max int16, lowest bool) kmsg.Request {
		if lowest {
			r.SetVersion(min)
		} else {
			r.SetVersion(max)
		}
		return r
	}
	all := func(lowest bool) []kmsg.Request {
		jg := kmsg.NewPtrJoinGroupRequest()
		jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis = "a1", "consumer", 6000
		jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1}}}
		sg := kmsg.NewPtrSyncGroupRequest()
		sg.Group, sg.MemberID = "a1", "m"
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group = "b2"
		lg := kmsg.NewPtrLeaveGroupRequest()
		lg.Group, lg.MemberID = "c3", "m"
		lg.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group = "a1"
		oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}, {Partition: 7}}}, {Topic: "x"}}
		of := kmsg.NewPtrOffsetFetchRequest()
		of.Group = "a1"
		of.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "a1"}, {Group: "c3", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{"a1", "b2", "c3", "a1"}
		lgs := kmsg.NewPtrListGroupsRequest()
		lgs.StatesFilter = []string{"Stable"}
		del := kmsg.NewPtrDeleteGroupsRequest()
		del.Groups = []string{"", "a1", "c3"}
		od := kmsg.NewPtrOffsetDeleteRequest()
		od.Group = "b2"
		od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}, {Partition: 9}}}}
		cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		cgh.Group, cgh.MemberID, cgh.RebalanceTimeoutMillis, cgh.SubscribedTopicNames = "a1", "m", 30000, []string{"t"}
		cgh.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: [16]byte{1}, Partitions: []int32{0}}}
		cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
		cgd.Groups = []string{"a1", "c3", "", "b2"}
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey, fc.CoordinatorKeys = "a1", []string{"a1", "", "c3"}
		return []kmsg.Request{
			at(jg, 2, 9, lowest), at(sg, 0, 5, lowest), at(hb, 0, 4, lowest), at(lg, 0, 5, lowest),
			at(oc, 2, 9, lowest), at(of, 1, 9, lowest), at(dg, 0, 6, lowest), at(lgs, 0, 5, lowest),
			at(del, 0, 2, lowest), at(od, 0, 0, lowest), at(fc, 0, 6, lowest),
			at(cgh, 0, 1, lowest), at(cgd, 0, 1, lowest),
		}
	}
	return [][]byte{stream(all)}
}

// FuzzGroupRequests runs fuzzed streams of group requests through the
// handlers' routing (split by shard, merge in request order, validation)
// against fakeGroups, which leads shards 'a' and 'b' only, and decodes
// every response back. Any panic fails.
func FuzzGroupRequests(f *testing.F) {
	for _, s := range groupSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		fg := &fakeGroups{fakeBroker: newFakeBroker("127.0.0.1:9092"), led: map[int32]bool{'a': true, 'b': true}, calls: map[int32][][]string{}}
		s, err := NewServer(fg, Options{MaxRequestBytes: fuzzMaxFrame})
		if err != nil {
			t.Fatal(err)
		}
		r := bytes.NewReader(stream)
		for {
			frame, err := readFrame(r, fuzzMaxFrame)
			if err != nil {
				return
			}
			req, err := decodeRequest(frame, s.table)
			if err != nil {
				if !errors.Is(err, ErrMalformedRequest) && !errors.Is(err, ErrUnknownAPI) && !errors.Is(err, ErrUnsupportedVersion) && !errors.Is(err, ErrFrameTooLarge) {
					t.Fatalf("decode error %v wraps no sentinel", err)
				}
				return
			}
			resp, err := req.api.handle(context.Background(), s, req)
			if err != nil || resp == nil {
				return
			}
			checkResponse(appendResponse(nil, req.correlationID, resp), req, resp)
		}
	})
}
