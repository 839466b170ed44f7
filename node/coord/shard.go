package coord

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/group"
	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/segment"
)

// loadReadBytes is how much of the partition one read of the load takes.
const loadReadBytes = 1 << 20

// shard drives one Machine: the offsets partition p led at epoch.
type shard struct {
	c     *Coordinator
	p     int32
	epoch int32
	// ctx ends when the shard is dropped: its load and appends stop.
	ctx    context.Context
	cancel context.CancelFunc
	// loadedCh is closed when the load is done.
	loadedCh chan struct{}

	mu struct {
		sync.Mutex
		m      Machine
		loaded bool
		gone   bool
		nextID uint64
		// waiting are the requests waiting for their Response, by id.
		waiting map[uint64]chan kmsg.Response
		// inflight are the appends written and not yet reported, in
		// order: Appended is called in that order.
		inflight []*inflight
		// lateTxns are CompleteTxn calls made while loading, for the
		// machine that loads.
		lateTxns []lateTxn
		// timer fires at the machine's NextDue (nil: none set); due is
		// when it is set for.
		timer *time.Timer
		due   time.Time
	}
}

// lateTxn is a CompleteTxn made while the shard loads.
type lateTxn struct {
	pid    int64
	commit bool
}

// inflight is one append waiting for acks=all.
type inflight struct {
	id   uint64
	done bool
	err  error
}

func newShard(c *Coordinator, p, epoch int32) *shard {
	s := &shard{c: c, p: p, epoch: epoch, loadedCh: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.m = c.opts.NewMachine(p, epoch, c.opts.Config)
	s.mu.waiting = map[uint64]chan kmsg.Response{}
	return s
}

// drop ends the shard: every request still waiting is answered
// NOT_COORDINATOR (its channel closed), the timer stopped, the load and
// the appends' waits abandoned.
func (s *shard) drop() {
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.gone = true
	for id, ch := range s.mu.waiting {
		close(ch)
		delete(s.mu.waiting, id)
	}
	if s.mu.timer != nil {
		s.mu.timer.Stop()
	}
}

// step passes one request to the machine and returns where its answer
// will come (closed: NOT_COORDINATOR).
func (s *shard) step(req kafka.GroupRequest) (<-chan kmsg.Response, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.mu.gone:
		return nil, 0, kerr.NotCoordinator
	case !s.mu.loaded:
		return nil, 0, kerr.CoordinatorLoadInProgress
	}
	s.mu.nextID++
	id := s.mu.nextID
	ch := make(chan kmsg.Response, 1)
	s.mu.waiting[id] = ch
	now := s.c.opts.Now()
	s.mu.m.TickTo(now)
	s.mu.m.Step(now, group.Request{ID: id, ClientID: req.ClientID, ClientHost: req.ClientHost, Body: req.Body})
	s.processLocked(now)
	return ch, id, nil
}

// forget drops the waiter of a request whose client gave up.
func (s *shard) forget(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mu.waiting, id)
}

// processLocked acts on the machine's Ready: appends in order, then
// responses; then sets the timer. s.mu must be held.
func (s *shard) processLocked(now time.Time) {
	for {
		rd := s.mu.m.Ready()
		if len(rd.Appends) == 0 && len(rd.Responses) == 0 {
			break
		}
		for _, a := range rd.Appends {
			s.appendLocked(now, a)
		}
		for _, r := range rd.Responses {
			if ch := s.mu.waiting[r.ID]; ch != nil {
				ch <- r.Body
				delete(s.mu.waiting, r.ID)
			}
		}
	}
	s.scheduleLocked(now)
}

// appendLocked writes one Append and waits for its acknowledgement on a
// goroutine; completions are reported to the machine in write order.
func (s *shard) appendLocked(now time.Time, a group.Append) {
	f := &inflight{id: a.ID}
	s.mu.inflight = append(s.mu.inflight, f)
	if len(a.Records) == 0 {
		f.done = true
		s.c.wg.Go(func() { s.complete(f, nil) })
		return
	}
	var p *producer
	if a.Transactional {
		// Appends of one shard are written one at a time under s.mu,
		// and nothing else writes to the partition under a producer's
		// id: the sequence read here is the one the log expects.
		p = &producer{id: a.ProducerID, epoch: a.ProducerEpoch}
		if sq, ok := s.c.host.(Sequencer); ok {
			p.seq = sq.NextSequence(s.p, a.ProducerID, a.ProducerEpoch)
		}
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.c.opts.CommitTimeout)
	res := s.c.host.Append(ctx, s.p, frameBatch(now.UnixMilli(), a.Records, p))
	s.c.wg.Go(func() {
		defer cancel()
		err := res.Err
		if err == nil && res.Pending != nil {
			select {
			case err = <-res.Pending:
			case <-ctx.Done():
				err = kerr.RequestTimedOut
				if errors.Is(s.ctx.Err(), context.Canceled) {
					err = kerr.NotCoordinator
				}
			}
		}
		s.complete(f, appendError(err))
	})
}

// complete records an append's outcome and reports every finished append
// at the head of the queue, in order.
func (s *shard) complete(f *inflight, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.done, f.err = true, err
	// A cancelled context means drop is under way (it cancels before it
	// takes s.mu): its waiting requests get NOT_COORDINATOR, not this
	// append's failure.
	if s.mu.gone || s.ctx.Err() != nil {
		return
	}
	now := s.c.opts.Now()
	reported := false
	for len(s.mu.inflight) > 0 && s.mu.inflight[0].done {
		h := s.mu.inflight[0]
		s.mu.inflight = s.mu.inflight[1:]
		if h.err != nil {
			s.c.log.Warn("coord: write to the partition failed", "topic", s.c.opts.Topic, "partition", s.p, "err", h.err)
		}
		s.mu.m.Appended(now, h.id, h.err)
		reported = true
	}
	if reported {
		s.processLocked(now)
	}
}

// scheduleLocked sets the timer to the machine's NextDue: one timer per
// shard, none while nothing is due (an idle shard costs no wake-ups).
func (s *shard) scheduleLocked(time.Time) {
	due := s.mu.m.NextDue()
	if s.mu.gone || due.Equal(s.mu.due) {
		return
	}
	s.mu.due = due
	if due.IsZero() {
		if s.mu.timer != nil {
			s.mu.timer.Stop()
		}
		return
	}
	d := max(due.Sub(s.c.opts.Now()), 0)
	if s.mu.timer == nil {
		s.mu.timer = time.AfterFunc(d, s.tick)
		return
	}
	s.mu.timer.Reset(d)
}

// tick runs on the timer: the machine's clock moves to now.
func (s *shard) tick() {
	s.c.wakeups.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.gone || !s.mu.loaded {
		return
	}
	s.mu.due = time.Time{}
	now := s.c.opts.Now()
	s.mu.m.TickTo(now)
	s.processLocked(now)
}

// load replays the partition into the machine: it waits until the high
// watermark reaches the log end this leader started with (what the old
// leader had committed is then committed here too), reads from the log
// start up to there, and ends the load. Requests meanwhile answer
// COORDINATOR_LOAD_IN_PROGRESS.
func (s *shard) load() {
	start := time.Now()
	var target int64
	for {
		changed := s.c.host.Changed()
		logStart, hw, leo, ok := s.c.host.Offsets(s.p, s.epoch)
		if !ok {
			// The replica stopped leading at this epoch: the next Sync
			// drops this shard.
			s.c.log.Info("coord: partition no longer led here; not loading", "topic", s.c.opts.Topic, "partition", s.p, "epoch", s.epoch)
			return
		}
		if target == 0 {
			target = leo
		}
		if hw >= target {
			if n, err := s.replay(logStart, target); err != nil {
				if s.ctx.Err() != nil {
					return
				}
				s.c.log.Warn("coord: reading the partition failed; retrying", "topic", s.c.opts.Topic, "partition", s.p, "records", n, "err", err)
				select {
				case <-s.ctx.Done():
					return
				case <-time.After(time.Second):
				}
				continue
			}
			break
		}
		select {
		case <-s.ctx.Done():
			return
		case <-changed:
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.gone {
		return
	}
	now := s.c.opts.Now()
	if tm, ok := s.mu.m.(TxnMachine); ok {
		for _, l := range s.mu.lateTxns {
			tm.CompleteTxn(now, l.pid, l.commit) // kept by the machine until LoadDone
		}
	}
	s.mu.lateTxns = nil
	s.mu.m.LoadDone(now)
	if ts, ok := s.mu.m.(TopicSetter); ok {
		if topics := s.c.lastTopics(); topics != nil {
			ts.SetTopics(now, topics)
		}
	}
	s.mu.loaded = true
	close(s.loadedCh)
	s.c.log.Info("coord: partition loaded", "topic", s.c.opts.Topic, "partition", s.p, "epoch", s.epoch, "end", target, "took", time.Since(start))
	if s.c.opts.OnLoaded != nil {
		s.c.opts.OnLoaded(s.p, time.Since(start))
	}
	s.processLocked(now)
}

// replay reads [from, upTo) and replays every record into the machine,
// from scratch (a retried load starts over with a new machine).
func (s *shard) replay(from, upTo int64) (int, error) {
	s.mu.Lock()
	s.mu.m = s.c.opts.NewMachine(s.p, s.epoch, s.c.opts.Config)
	s.mu.Unlock()
	var recs []record
	n := 0
	for off := from; off < upTo; {
		if s.ctx.Err() != nil {
			return n, s.ctx.Err()
		}
		// A new buffer for each read: the machine may keep slices of
		// what it replays (kmsg aliases decoded bytes).
		data, next, err := s.c.host.Read(s.p, off, upTo, loadReadBytes, nil)
		if err != nil {
			return n, err
		}
		if next <= off {
			break // nothing more below upTo (a compacted tail)
		}
		recs = recs[:0]
		it := segment.NewBatchIter(data)
		for h, b, ok := it.Next(); ok; h, b, ok = it.Next() {
			before := len(recs)
			if recs, err = decodeBatch(recs, h, b); err != nil {
				recs = recs[:before] // none of a bad batch
				s.c.log.Error("coord: skipping an undecodable batch", "topic", s.c.opts.Topic, "partition", s.p, "offset", h.BaseOffset, "err", err)
			}
		}
		s.mu.Lock()
		for _, r := range recs {
			if r.Offset < off {
				continue
			}
			n++
			var err error
			tm, txns := s.mu.m.(TxnMachine)
			switch {
			case r.Marker && txns:
				tm.ReplayMarker(r.ProducerID, r.Commit)
			case r.Marker:
			case r.ProducerID >= 0 && txns:
				err = tm.ReplayTxn(r.Offset, r.ProducerID, r.Key, r.Value)
			default:
				err = s.mu.m.Replay(r.Offset, r.Key, r.Value)
			}
			if err != nil {
				s.c.log.Error("coord: skipping an undecodable record", "topic", s.c.opts.Topic, "partition", s.p, "offset", r.Offset, "err", err)
			}
		}
		s.mu.Unlock()
		off = next
	}
	return n, nil
}
