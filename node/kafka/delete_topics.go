package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// DeleteTopics (key 20), versions 0-6; spoken only when the Broker is a
// TopicAdmin.
//
// v0-5 name topics; v6 names each by name or by ID. Refused per topic
// without asking the Broker, with INVALID_REQUEST: a v6 entry with both a
// name and an ID, or with neither; a name or ID given more than once (one
// result for it). The rest go to TopicAdmin.DeleteTopics in one call, with a
// context that ends at timeout_ms when it is positive; unknown topics are
// the Broker's to answer (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID).
// Results keep request order (first appearance); error messages are sent
// from v5, topic IDs from v6.
// Authorization: DELETE on each topic (TOPIC_AUTHORIZATION_FAILED).
func handleDeleteTopics(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)

	type entry struct {
		ref     TopicRef
		invalid string // INVALID_REQUEST message, "" if valid
	}
	var entries []entry
	if req.Version < 6 {
		for _, name := range req.TopicNames {
			entries = append(entries, entry{ref: TopicRef{Name: name}})
		}
	} else {
		for _, t := range req.Topics {
			e := entry{ref: TopicRef{Name: derefOr(t.Topic, ""), ID: t.TopicID}}
			switch {
			case t.Topic != nil && t.TopicID != (TopicID{}):
				e.invalid = "You may not specify both topic name and topic id."
			case t.Topic == nil && t.TopicID == (TopicID{}):
				e.invalid = "Neither topic name nor id were specified."
			}
			entries = append(entries, e)
		}
	}

	var valid []TopicRef
	var validAt []int
	for i, n := range firstOfEach(entries, func(e entry) TopicRef { return e.ref }) {
		e := entries[i]
		rt := kmsg.NewDeleteTopicsResponseTopic()
		if e.ref.Name != "" || req.Version < 6 {
			rt.Topic = kmsg.StringPtr(e.ref.Name)
		}
		rt.TopicID = e.ref.ID
		switch {
		case e.invalid != "":
			setDeleteError(&rt, kerr.InvalidRequest, e.invalid)
		case n > 1:
			setDeleteError(&rt, kerr.InvalidRequest, "Duplicate topic name or id.")
		case !deleteAllowed(s, r, e.ref):
			setDeleteError(&rt, kerr.TopicAuthorizationFailed, "")
		default:
			valid = append(valid, e.ref)
			validAt = append(validAt, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	results, err := askBroker(ctx, req.TimeoutMillis, "delete topics", valid, s.broker.(TopicAdmin).DeleteTopics)
	if err != nil {
		return nil, err
	}
	for i, res := range results {
		rt := &resp.Topics[validAt[i]]
		if res.Name != "" {
			rt.Topic = kmsg.StringPtr(res.Name)
		}
		if res.ID != (TopicID{}) {
			rt.TopicID = res.ID
		}
		if res.Err != nil {
			setDeleteError(rt, res.Err, res.ErrMessage)
		}
	}
	return resp, nil
}

// deleteAllowed checks DELETE on the topic; one named by an ID the
// Broker does not know is left to it (UNKNOWN_TOPIC_ID).
func deleteAllowed(s *Server, r *request, ref TopicRef) bool {
	if !s.Authorizing() {
		return true
	}
	name := ref.Name
	if name == "" {
		tn, ok := s.broker.(TopicNames)
		if !ok {
			return true
		}
		if name, ok = tn.TopicName(ref.ID); !ok {
			return true
		}
	}
	return s.allowed(r, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, name)
}

func setDeleteError(rt *kmsg.DeleteTopicsResponseTopic, err error, msg string) {
	rt.ErrorCode = quorum.ErrorCode(err)
	if msg != "" {
		rt.ErrorMessage = kmsg.StringPtr(msg)
	}
}
