package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFindCoordinatorWire: every version refuses groups and transactional
// ids with the final (not retriable) authorization errors and no
// coordinator; v4 answers each key.
func TestFindCoordinatorWire(t *testing.T) {
	ts := startServer(t, Options{})
	c := dial(t, ts.addr)
	for v := int16(0); v <= 4; v++ {
		for typ, want := range map[int8]*kerr.Error{0: kerr.GroupAuthorizationFailed, 1: kerr.TransactionalIDAuthorizationFailed, 7: kerr.InvalidRequest} {
			if v == 0 && typ != 0 {
				continue // v0 has no coordinator type: always a group
			}
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.Version, req.CoordinatorType = v, typ
			req.CoordinatorKey, req.CoordinatorKeys = "g", []string{"g", "h"}
			resp := c.roundTrip(req).(*kmsg.FindCoordinatorResponse)
			if v < 4 {
				if resp.ErrorCode != want.Code || resp.NodeID != -1 || (v >= 1) != (resp.ErrorMessage != nil) {
					t.Errorf("v%d type %d: error %d node %d message %v, want %s and node -1", v, typ, resp.ErrorCode, resp.NodeID, resp.ErrorMessage, want.Message)
				}
				continue
			}
			if len(resp.Coordinators) != 2 {
				t.Fatalf("v4 type %d: %d coordinators, want one per key", typ, len(resp.Coordinators))
			}
			for i, co := range resp.Coordinators {
				if co.Key != req.CoordinatorKeys[i] || co.ErrorCode != want.Code || co.NodeID != -1 {
					t.Errorf("v4 type %d key %d: %+v, want %s for %q", typ, i, co, want.Message, req.CoordinatorKeys[i])
				}
			}
		}
	}
}
