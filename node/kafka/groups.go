package kafka

import (
	"context"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Groups is the optional Broker capability to coordinate consumer groups
// (the classic protocol and committed offsets). With it the server serves
// FindCoordinator for groups, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups,
// OffsetDelete and TxnOffsetCommit; the node implements it over
// node/coord.
//
// The handlers route: each group lives in one shard (a partition of
// __consumer_offsets); a request naming several groups is split by shard,
// each part passed to Coordinate, and the answers merged in request
// order. The handlers check what needs no state (an empty group id, the
// partitions of an OffsetCommit or OffsetDelete exist); the shard answers
// the rest.
//
// Contract, besides Broker's: every method may be called concurrently; a
// returned error is a *kerr.Error meant for the client (any other error is
// answered COORDINATOR_NOT_AVAILABLE).
type Groups interface {
	// FindGroupCoordinator returns the broker that coordinates group, at
	// its endpoint for listener, creating the offsets topic on first use.
	// COORDINATOR_NOT_AVAILABLE while the group's partition has no leader
	// (or the topic is being created).
	FindGroupCoordinator(ctx context.Context, listener, group string) (BrokerInfo, error)
	// GroupShard is the offsets partition of group; false while the offsets
	// topic does not exist.
	GroupShard(group string) (int32, bool)
	// Coordinate passes one request, holding only groups of shard, to that
	// shard and returns its answer: a response of the request's kind and
	// version. An error answers every group of the request:
	// NOT_COORDINATOR when this broker does not lead the shard (or stops
	// leading it while the request waits), COORDINATOR_LOAD_IN_PROGRESS,
	// COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT.
	Coordinate(ctx context.Context, shard int32, req GroupRequest) (kmsg.Response, error)
	// ListGroups lists the groups of every shard this broker leads,
	// filtered by states and types (empty: all). An error (a shard still
	// loading: COORDINATOR_LOAD_IN_PROGRESS) is the response's.
	ListGroups(ctx context.Context, states, types []string) ([]kmsg.ListGroupsResponseGroup, error)
	// PartitionExists says whether topic has partition: an OffsetCommit,
	// TxnOffsetCommit or OffsetDelete of any other gets
	// UNKNOWN_TOPIC_OR_PARTITION.
	PartitionExists(topic string, partition int32) bool
}

// GroupRequest is one request for the groups of one shard.
type GroupRequest struct {
	// ClientID and ClientHost are the connection's (DescribeGroups shows
	// them per member): the client id of the request header and the
	// peer's address as Kafka prints it ("/" + IP).
	ClientID, ClientHost string
	// Body is the decoded request at its version.
	Body kmsg.Request
}

// groupRequest wraps body for the shard, with r's client id and host.
func groupRequest(r *request, body kmsg.Request) GroupRequest {
	g := GroupRequest{ClientHost: "/" + r.host, Body: body}
	if r.clientID != nil {
		g.ClientID = *r.clientID
	}
	return g
}

// groupCode is the error code for an error from Groups.
func groupCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// coordinateOne passes a single-group request to its shard. Before the
// offsets topic exists no broker coordinates anything: NOT_COORDINATOR,
// which sends the client back to FindCoordinator (which creates it).
func coordinateOne(ctx context.Context, s *Server, r *request, group string) (kmsg.Response, error) {
	g := s.broker.(Groups)
	shard, ok := g.GroupShard(group)
	if !ok {
		return nil, kerr.NotCoordinator
	}
	resp, err := g.Coordinate(ctx, shard, groupRequest(r, r.body))
	if err == nil && resp == nil {
		err = kerr.CoordinatorNotAvailable
	}
	return resp, err
}

// coordinateGroup answers a request for one group (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup): INVALID_GROUP_ID for an empty group id, else
// its shard's answer, or the shard's error on a response of the
// request's kind made by failed (which sets the code and whatever else
// an error answer carries).
func coordinateGroup[R kmsg.Response](ctx context.Context, s *Server, r *request, group string, failed func(R, int16)) (kmsg.Response, error) {
	fail := func(code int16) (kmsg.Response, error) {
		resp := r.body.ResponseKind().(R)
		failed(resp, code)
		return resp, nil
	}
	if group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	resp, err := coordinateOne(ctx, s, r, group)
	if err != nil {
		return fail(groupCode(err))
	}
	return resp, nil
}

// mergeGroups is the answer for each of ids (in order) from its shard's
// answer (answers[i]): the shard's entry for it, else missing(id, code)
// with the shard's error (COORDINATOR_NOT_AVAILABLE when the shard left
// the group out).
func mergeGroups[G any](ids []string, answers []shardAnswer, groups func(kmsg.Response) []G, name func(G) string, missing func(id string, code int16) G) []G {
	out := make([]G, 0, len(ids))
	for i, id := range ids {
		a := answers[i]
		if a.err == nil {
			if g, ok := findGroup(groups(a.resp), id, name); ok {
				out = append(out, g)
				continue
			}
		}
		out = append(out, missing(id, groupCode(a.err)))
	}
	return out
}

// shardAnswer is one shard's answer to its part of a multi-group request.
type shardAnswer struct {
	resp kmsg.Response
	err  error
}

// coordinateMany splits groups (by index) by shard, asks every shard at
// once with the request part build makes for its group indexes, and
// returns each group index's answer. Groups without a shard get
// NOT_COORDINATOR.
func coordinateMany(ctx context.Context, s *Server, r *request, groups []string, build func(idx []int) kmsg.Request) []shardAnswer {
	g := s.broker.(Groups)
	return coordinateSplit(ctx, r, groups, g.GroupShard, g.Coordinate, build)
}

// coordinateSplit is coordinateMany over any coordinator: keys are
// placed by shardOf and each shard's part passed to do (groups and
// transactional ids).
func coordinateSplit(ctx context.Context, r *request, keys []string, shardOf func(string) (int32, bool),
	do func(context.Context, int32, GroupRequest) (kmsg.Response, error), build func(idx []int) kmsg.Request) []shardAnswer {
	out := make([]shardAnswer, len(keys))
	byShard := map[int32][]int{}
	var order []int32
	for i, id := range keys {
		shard, ok := shardOf(id)
		if !ok {
			out[i].err = kerr.NotCoordinator
			continue
		}
		if _, seen := byShard[shard]; !seen {
			order = append(order, shard)
		}
		byShard[shard] = append(byShard[shard], i)
	}
	var wg sync.WaitGroup
	for _, shard := range order {
		idx := byShard[shard]
		wg.Go(func() {
			resp, err := do(ctx, shard, groupRequest(r, build(idx)))
			if err == nil && resp == nil {
				err = kerr.CoordinatorNotAvailable
			}
			for _, i := range idx {
				out[i] = shardAnswer{resp: resp, err: err}
			}
		})
	}
	wg.Wait()
	return out
}
