package txn

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sim drives one shard with random producers, clocks, write outcomes,
// marker failures and coordinator failovers.
type sim struct {
	t    *testing.T
	rng  *rand.Rand
	cfg  Config
	s    *Shard
	now  time.Time
	log  []Record
	pend []Append
	mark []Markers
	need bool
	pid  int64

	reqID uint64
	open  map[uint64]bool
	prods map[string]*simProducer
	inits map[uint64]string // open InitProducerId requests: their producer
	stats struct{ answered, commits, aborts, fenced, rotations, bumps int }
}

type simProducer struct {
	pid   int64
	epoch int16
	known bool
}

var simIDs = []string{"a", "b", "c", "d", "e"}

func newSim(t *testing.T, seed int64) *sim {
	cfg := DefaultConfig()
	cfg.StatePartitions = 1
	cfg.IDExpiration = 10 * time.Minute
	cfg.RemoveInterval = time.Minute
	x := &sim{t: t, rng: rand.New(rand.NewSource(seed)), cfg: cfg, now: t0, pid: 1000,
		open: map[uint64]bool{}, inits: map[uint64]string{}, prods: map[string]*simProducer{}}
	x.s = NewShard(0, cfg)
	for _, id := range simIDs {
		x.prods[id] = &simProducer{}
		if seed%2 == 1 {
			// Near the last epoch: rotations to new producer ids happen
			// within the run.
			r := metaRecord(id, meta{pid: 100 + int64(len(x.log)), epoch: 32760, lastPid: -1, timeout: time.Minute, updated: t0})
			x.log = append(x.log, r)
			if err := x.s.Replay(0, r.Key, r.Value); err != nil {
				t.Fatal(err)
			}
			x.prods[id] = &simProducer{pid: 100 + int64(len(x.log)-1), epoch: 32760, known: true}
		}
	}
	x.s.LoadDone(x.now)
	x.collect()
	return x
}

func (x *sim) step(body kmsg.Request) {
	x.reqID++
	x.open[x.reqID] = true
	x.s.Step(x.now, Request{ID: x.reqID, Body: body})
	x.collect()
}

func (x *sim) collect() {
	rd := x.s.Ready()
	for _, r := range rd.Responses {
		if !x.open[r.ID] {
			x.t.Fatalf("response to request %d, which is not waiting (answered twice?)", r.ID)
		}
		delete(x.open, r.ID)
		x.stats.answered++
		x.learn(r)
	}
	x.pend = append(x.pend, rd.Appends...)
	x.mark = append(x.mark, rd.Markers...)
	x.need = x.need || rd.NeedProducerIDs
}

func (x *sim) learn(r Response) {
	switch b := r.Body.(type) {
	case *kmsg.InitProducerIDResponse:
		id, ok := x.inits[r.ID]
		delete(x.inits, r.ID)
		if ok && b.ErrorCode == 0 {
			p := x.prods[id]
			if p.known && p.pid != b.ProducerID && x.s.txns[id] != nil && x.s.txns[id].lastPid == p.pid {
				x.stats.rotations++ // the epoch ran out: a new producer id
			}
			p.pid, p.epoch, p.known = b.ProducerID, b.ProducerEpoch, true
		}
	case *kmsg.EndTxnResponse:
		id, ok := x.inits[r.ID]
		delete(x.inits, r.ID)
		if b.ErrorCode == kerr.ProducerFenced.Code {
			x.stats.fenced++
		}
		if ok && b.ErrorCode == 0 && b.Version >= 5 {
			// transaction.version 2: the answer carries the producer's
			// next id and epoch.
			p := x.prods[id]
			if b.ProducerID == p.pid && b.ProducerEpoch < p.epoch {
				x.t.Fatalf("EndTxn v5 of %q answered epoch %d, older than the producer's %d", id, b.ProducerEpoch, p.epoch)
			}
			if b.ProducerID != p.pid {
				x.stats.rotations++
			}
			x.stats.bumps++
			p.pid, p.epoch = b.ProducerID, b.ProducerEpoch
		}
	}
}

func (x *sim) randomStep() {
	id := simIDs[x.rng.Intn(len(simIDs))]
	p := x.prods[id]
	parts := func() []TopicPartition {
		var ps []TopicPartition
		for n := 1 + x.rng.Intn(3); n > 0; n-- {
			ps = append(ps, TopicPartition{[]string{"t", "u"}[x.rng.Intn(2)], int32(x.rng.Intn(4))})
		}
		return ps
	}
	epoch := p.epoch
	if x.rng.Intn(10) == 0 {
		epoch-- // a zombie
	}
	switch n := x.rng.Intn(100); {
	case n < 12:
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = int16(x.rng.Intn(6))
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = int32(5000 + x.rng.Intn(60000))
		req.ProducerID, req.ProducerEpoch = -1, -1
		if p.known && x.rng.Intn(2) == 0 {
			req.ProducerID, req.ProducerEpoch = p.pid, epoch
		}
		x.inits[x.reqID+1] = id
		x.step(req)
	case n < 35:
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = int16(x.rng.Intn(4))
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, p.pid, epoch
		for _, tp := range parts() {
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
			req.Topics = append(req.Topics, rt)
		}
		x.step(req)
	case n < 42:
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 4 + int16(x.rng.Intn(2))
		for k := 1 + x.rng.Intn(2); k > 0; k-- {
			rx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			rx.TransactionalID, rx.ProducerID, rx.ProducerEpoch = id, p.pid, epoch
			rx.VerifyOnly = x.rng.Intn(2) == 0
			for _, tp := range parts() {
				rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
				rx.Topics = append(rx.Topics, rt)
			}
			req.Transactions = append(req.Transactions, rx)
		}
		x.step(req)
	case n < 47:
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version = int16(x.rng.Intn(5))
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, p.pid, epoch, "g"
		x.step(req)
	case n < 57:
		req := kmsg.NewPtrEndTxnRequest()
		req.Version = int16(x.rng.Intn(6))
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, p.pid, epoch
		req.Commit = x.rng.Intn(3) > 0
		x.inits[x.reqID+1] = id
		x.step(req)
	case n < 60:
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id, "zz"}
		x.step(req)
	case n < 70:
		x.advance(time.Duration(x.rng.Intn(20000)) * time.Millisecond)
	case n < 84:
		if len(x.pend) > 0 {
			x.ack(x.rng.Intn(8) == 0)
		}
	case n < 94:
		if len(x.mark) > 0 {
			x.markers(x.rng.Intn(4) == 0)
		}
	case n < 97:
		if x.need {
			x.pids(x.rng.Intn(6) == 0)
		}
	case n < 99:
		x.s.ListTransactions(x.now, []string{"Ongoing", "x"}, nil, time.Second)
		x.s.Stats()
	default:
		x.failover()
	}
}

func (x *sim) advance(d time.Duration) {
	to := x.now.Add(d)
	for {
		due := x.s.NextDue()
		if due.IsZero() || due.After(to) {
			break
		}
		if due.After(x.now) {
			x.now = due
		}
		x.s.TickTo(x.now)
		x.collect()
		if next := x.s.NextDue(); !next.IsZero() && !next.After(x.now) {
			x.t.Fatalf("NextDue %v stays at or before now %v", next, x.now)
		}
	}
	x.now = to
	x.s.TickTo(x.now)
	x.collect()
}

func (x *sim) ack(fail bool) {
	i := 0 // appends complete in write order
	a := x.pend[i]
	x.pend = x.pend[1:]
	var err error
	if fail {
		err = []error{kerr.NotLeaderForPartition, kerr.RequestTimedOut, kerr.NotEnoughReplicas, errors.New("disk")}[x.rng.Intn(4)]
	} else {
		x.log = append(x.log, a.Records...)
	}
	x.s.Appended(x.now, a.ID, err)
	x.collect()
}

func (x *sim) markers(fail bool) {
	i := x.rng.Intn(len(x.mark))
	m := x.mark[i]
	x.mark = append(x.mark[:i], x.mark[i+1:]...)
	var failed []TopicPartition
	if fail {
		failed = m.Partitions[:1+x.rng.Intn(len(m.Partitions))]
	} else if m.Commit {
		x.stats.commits++
	} else {
		x.stats.aborts++
	}
	x.s.MarkersWritten(x.now, m.ID, failed)
	x.collect()
}

func (x *sim) pids(fail bool) {
	x.need = false
	if fail {
		x.s.ProducerIDsFailed(x.now, kerr.CoordinatorLoadInProgress)
	} else {
		x.s.ProducerIDs(x.now, x.pid, 3)
		x.pid += 3
	}
	x.collect()
}

// failover: the coordinator moves; a new one loads the log. Requests
// still waiting are answered NOT_COORDINATOR by the driver.
func (x *sim) failover() {
	for id := range x.open {
		delete(x.open, id)
		delete(x.inits, id)
	}
	x.pend, x.mark, x.need = nil, nil, false
	x.s = NewShard(0, x.cfg)
	for i, r := range x.log {
		if err := x.s.Replay(int64(i), r.Key, r.Value); err != nil {
			x.t.Fatalf("replay of record %d: %v", i, err)
		}
	}
	x.s.LoadDone(x.now)
	x.collect()
}

// settle completes every write, marker and id request.
func (x *sim) settle() {
	for i := 0; len(x.pend)+len(x.mark) > 0 || x.need; i++ {
		if i > 10000 {
			x.t.Fatalf("does not settle")
		}
		switch {
		case len(x.pend) > 0:
			x.ack(false)
		case len(x.mark) > 0:
			x.markers(false)
		case x.need:
			x.pids(false)
		}
	}
}

func (x *sim) checkReplay() {
	r := NewShard(0, x.cfg)
	for i, rec := range x.log {
		if err := r.Replay(int64(i), rec.Key, rec.Value); err != nil {
			x.t.Fatalf("replay of record %d: %v", i, err)
		}
	}
	if a, b := persisted(x.s), persisted(r); a != b {
		x.t.Fatalf("replay differs:\nlive:\n%s\nreplayed:\n%s", a, b)
	}
}

// TestRandom: every request is answered exactly once; once writes have
// landed, replaying the log gives the live state back; with -tags
// invariants the shard checks itself after every event.
func TestRandom(t *testing.T) {
	seeds, steps := 40, 2000
	if testing.Short() {
		seeds = 5
	}
	var total sim
	for seed := int64(0); seed < int64(seeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			x := newSim(t, seed)
			for i := 0; i < steps; i++ {
				x.randomStep()
				if i%200 == 199 {
					x.settle()
					x.checkReplay()
				}
			}
			x.settle()
			x.advance(time.Hour) // time out and abort what is left
			x.settle()
			x.checkReplay()
			if len(x.open) > 0 {
				t.Fatalf("%d requests never answered", len(x.open))
			}
			for id, tx := range x.s.txns {
				if !tx.state.idle() {
					t.Fatalf("%q still %v after the timeouts", id, tx.state)
				}
			}
			total.stats.answered += x.stats.answered
			total.stats.commits += x.stats.commits
			total.stats.aborts += x.stats.aborts
			total.stats.rotations += x.stats.rotations
			total.stats.bumps += x.stats.bumps
		})
	}
	if total.stats.commits == 0 || total.stats.aborts == 0 {
		t.Fatalf("the random producers never committed (%d) or aborted (%d): the test tests nothing", total.stats.commits, total.stats.aborts)
	}
	if total.stats.rotations == 0 || total.stats.bumps == 0 {
		t.Fatalf("no producer id was ever rotated at the last epoch (%d) or no EndTxn v5 bumped an epoch (%d)", total.stats.rotations, total.stats.bumps)
	}
	t.Logf("%d answers, %d commits, %d aborts, %d rotations, %d EndTxn v5 bumps", total.stats.answered, total.stats.commits, total.stats.aborts, total.stats.rotations, total.stats.bumps)
}
