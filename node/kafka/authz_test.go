package kafka

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// denyAll refuses everything but what allow names (op on resource type).
type denyAll struct {
	allow map[kmsg.ACLOperation]kmsg.ACLResourceType
}

func (d denyAll) Authorize(_, _ string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, _ string) bool {
	t, ok := d.allow[op]
	return ok && t == rt
}

func (d denyAll) AuthorizeAny(p, h string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	return d.Authorize(p, h, op, rt, "")
}

// TestAuthorizeAPIRefusals: every request the dispatch hook refuses is
// answered with its API's authorization error, at every version, in a
// response that encodes and decodes back; a request the principal may
// make goes on to its handler (nil).
func TestAuthorizeAPIRefusals(t *testing.T) {
	s, err := NewServer(newFakeData("127.0.0.1:9092"), Options{Authorizer: denyAll{}})
	if err != nil {
		t.Fatal(err)
	}
	group := kerr.GroupAuthorizationFailed.Code
	cluster := kerr.ClusterAuthorizationFailed.Code
	for _, tc := range []struct {
		req  kmsg.Request
		code func(kmsg.Response) int16
	}{
		{&kmsg.DescribeClusterRequest{}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeClusterResponse).ErrorCode }},
		{&kmsg.DescribeQuorumRequest{}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeQuorumResponse).ErrorCode }},
		{&kmsg.ElectLeadersRequest{Topics: []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}}, func(r kmsg.Response) int16 {
			return r.(*kmsg.ElectLeadersResponse).Topics[0].Partitions[1].ErrorCode
		}},
		{&kmsg.AlterPartitionAssignmentsRequest{}, func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode }},
		{&kmsg.UnregisterBrokerRequest{BrokerID: 4}, func(r kmsg.Response) int16 { return r.(*kmsg.UnregisterBrokerResponse).ErrorCode }},
		{&kmsg.ListPartitionReassignmentsRequest{}, func(r kmsg.Response) int16 { return r.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode }},
		{&kmsg.DescribeUserSCRAMCredentialsRequest{}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode }},
		{&kmsg.AlterUserSCRAMCredentialsRequest{Deletions: []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "a", Mechanism: 1}, {Name: "a", Mechanism: 2}}}, func(r kmsg.Response) int16 {
			resp := r.(*kmsg.AlterUserSCRAMCredentialsResponse)
			if len(resp.Results) != 1 {
				return -1
			}
			return resp.Results[0].ErrorCode
		}},
		{&kmsg.DescribeACLsRequest{}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeACLsResponse).ErrorCode }},
		{&kmsg.WriteTxnMarkersRequest{Markers: []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 7, Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t", Partitions: []int32{0, 1}}}}}}, func(r kmsg.Response) int16 {
			resp := r.(*kmsg.WriteTxnMarkersResponse)
			if len(resp.Markers) != 1 || resp.Markers[0].ProducerID != 7 || len(resp.Markers[0].Topics[0].Partitions) != 2 {
				return -1
			}
			return resp.Markers[0].Topics[0].Partitions[1].ErrorCode
		}},
		{&kmsg.CreateACLsRequest{Creations: []kmsg.CreateACLsRequestCreation{{}}}, func(r kmsg.Response) int16 { return r.(*kmsg.CreateACLsResponse).Results[0].ErrorCode }},
		{&kmsg.DeleteACLsRequest{Filters: []kmsg.DeleteACLsRequestFilter{{}}}, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteACLsResponse).Results[0].ErrorCode }},
		{&kmsg.JoinGroupRequest{Group: "g"}, func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }},
		{&kmsg.SyncGroupRequest{Group: "g"}, func(r kmsg.Response) int16 { return r.(*kmsg.SyncGroupResponse).ErrorCode }},
		{&kmsg.HeartbeatRequest{Group: "g"}, func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode }},
		{&kmsg.LeaveGroupRequest{Group: "g"}, func(r kmsg.Response) int16 { return r.(*kmsg.LeaveGroupResponse).ErrorCode }},
		{&kmsg.OffsetCommitRequest{Group: "g", Topics: []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 3}}}}},
			func(r kmsg.Response) int16 { return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode }},
		{&kmsg.OffsetDeleteRequest{Group: "g"}, func(r kmsg.Response) int16 { return r.(*kmsg.OffsetDeleteResponse).ErrorCode }},
	} {
		want := cluster
		switch tc.req.(type) {
		case *kmsg.JoinGroupRequest, *kmsg.SyncGroupRequest, *kmsg.HeartbeatRequest, *kmsg.LeaveGroupRequest, *kmsg.OffsetCommitRequest, *kmsg.OffsetDeleteRequest:
			want = group
		}
		for v := int16(0); v <= tc.req.MaxVersion(); v++ {
			tc.req.SetVersion(v)
			r := &request{key: tc.req.Key(), version: v, correlationID: 7, body: tc.req, principal: "User:alice", host: "10.0.0.1"}
			resp := s.authorizeAPI(r)
			if resp == nil {
				t.Fatalf("%s v%d: not refused", kmsg.NameForKey(r.key), v)
			}
			if got := tc.code(resp); got != want {
				t.Fatalf("%s v%d: code %d, want %d", kmsg.NameForKey(r.key), v, got, want)
			}
			checkResponse(appendResponse(nil, r.correlationID, resp), r, resp)
		}
	}
	if st := s.AuthzStats(); st.Denied == 0 || st.Allowed != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Allowed: on to the handler.
	s2, _ := NewServer(newFakeData("127.0.0.1:9092"), Options{Authorizer: denyAll{allow: map[kmsg.ACLOperation]kmsg.ACLResourceType{
		kmsg.ACLOperationDescribe: kmsg.ACLResourceTypeCluster}}})
	req := &kmsg.DescribeClusterRequest{}
	if resp := s2.authorizeAPI(&request{key: req.Key(), body: req}); resp != nil {
		t.Fatalf("allowed DescribeCluster refused: %+v", resp)
	}
}

// TestHandlersRefuse: with an authorizer that refuses everything, the
// data and admin handlers answer each resource with its authorization
// error and never reach the Broker's data: nothing is produced.
func TestHandlersRefuse(t *testing.T) {
	fd := newFakeData("127.0.0.1:9092")
	s, err := NewServer(fd, Options{Authorizer: denyAll{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		req.SetVersion(s.table.lookup(req.Key()).max)
		r := &request{key: req.Key(), version: req.GetVersion(), body: req, api: s.table.lookup(req.Key()), principal: "User:alice", host: "h"}
		resp, err := r.api.handle(ctx, s, r)
		if err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(r.key), err)
		}
		if d, ok := resp.(*deferredResponse); ok {
			d.wait()
			resp = d.Response
		}
		if f, ok := resp.(*fileFetchResponse); ok {
			resp = f.FetchResponse
		}
		checkResponse(appendResponse(nil, 0, resp), r, resp)
		return resp
	}
	tf := kerr.TopicAuthorizationFailed.Code
	prod := &kmsg.ProduceRequest{Acks: -1, TimeoutMillis: 1000, Topics: []kmsg.ProduceRequestTopic{{Topic: "orders", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: []byte{1}}}}}}
	if got := call(prod).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; got != tf {
		t.Fatalf("produce: %d", got)
	}
	if len(fd.logs[0]) != 0 {
		t.Fatal("a refused produce was appended")
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.ReplicaState.ID = -1, -1
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "orders", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0}}}}
	if got := call(fetch).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; got != tf {
		t.Fatalf("consumer fetch: %d", got)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "orders", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1}}}}
	if got := call(lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode; got != tf {
		t.Fatalf("list offsets: %d", got)
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "n", NumPartitions: 1, ReplicationFactor: 1}}
	if got := call(ct).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; got != tf {
		t.Fatalf("create topics: %d", got)
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t"}, {ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"}}
	res := call(dc).(*kmsg.DescribeConfigsResponse).Resources
	if res[0].ErrorCode != tf || res[1].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("describe configs: %d %d", res[0].ErrorCode, res[1].ErrorCode)
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	if got := call(ip).(*kmsg.InitProducerIDResponse).ErrorCode; got != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("init producer id: %d", got)
	}
	md := kmsg.NewPtrMetadataRequest()
	if got := call(md).(*kmsg.MetadataResponse).Topics; len(got) != 0 {
		t.Fatalf("all-topics metadata shows %d topics", len(got))
	}
	open, _ := NewServer(newFakeData("127.0.0.1:9092"), Options{})
	r := &request{key: md.Key(), version: md.Version, body: md, api: open.table.lookup(md.Key())}
	if resp, err := r.api.handle(ctx, open, r); err != nil || len(resp.(*kmsg.MetadataResponse).Topics) == 0 {
		t.Fatalf("without an authorizer the fake shows no topic either: %v", err)
	}
}
