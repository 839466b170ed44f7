package txncoord

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/coord"
	"github.com/sluice-log/sluice/node/group"
	"github.com/sluice-log/sluice/node/txn"
)

// machine puts a txn.Shard behind coord.Machine: coord's driver loads it,
// appends its records in order, runs its timer and routes its requests;
// what only transactions need comes out of Ready here: Markers go to the
// marker senders, NeedProducerIDs to the controller, and their outcomes
// come back through coord.Coordinator.Run. Its group methods answer
// nothing (no groups live in __transaction_state).
type machine struct {
	c        *Coordinator
	p, epoch int32
	s        *txn.Shard
}

var _ coord.Machine = (*machine)(nil)

func (m *machine) Replay(offset int64, key, value []byte) error {
	return m.s.Replay(offset, key, value)
}
func (m *machine) LoadDone(now time.Time) { m.s.LoadDone(now) }
func (m *machine) Step(now time.Time, r group.Request) {
	m.s.Step(now, txn.Request{ID: r.ID, Body: r.Body})
}
func (m *machine) Appended(now time.Time, id uint64, err error) { m.s.Appended(now, id, err) }
func (m *machine) TickTo(now time.Time)                         { m.s.TickTo(now) }
func (m *machine) NextDue() time.Time                           { return m.s.NextDue() }
func (m *machine) ListGroups(_, _ []string) []kmsg.ListGroupsResponseGroup {
	return nil
}
func (m *machine) TopicsDeleted(time.Time, []string) {}
func (m *machine) Stats() group.Stats                { return group.Stats{} }

// Ready hands the markers and the need for producer ids on (their
// outcomes come back later through Run, never from inside this call) and
// gives coord the appends and responses.
func (m *machine) Ready() group.Ready {
	rd := m.s.Ready()
	for _, mk := range rd.Markers {
		m.c.markers.send(m.p, m.epoch, mk)
	}
	if rd.NeedProducerIDs {
		m.c.wg.Go(func() { m.c.allocate(m.p, m.epoch) })
	}
	var out group.Ready
	for _, a := range rd.Appends {
		recs := make([]group.Record, len(a.Records))
		for i, r := range a.Records {
			recs[i] = group.Record(r)
		}
		out.Appends = append(out.Appends, group.Append{ID: a.ID, Records: recs})
	}
	for _, r := range rd.Responses {
		out.Responses = append(out.Responses, group.Response(r))
	}
	return out
}
