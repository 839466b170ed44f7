package txn

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDataDriven runs the scripts in testdata/: one shard, a clock, the
// requests of scripted producers and brokers, the Appends acknowledged at
// once (auto-ack, the default) or one by one, markers written at once
// (auto-markers) or one by one, producer id blocks given at once
// (auto-pids). Every clock move checks that a tick before NextDue
// changes nothing. Regenerate with -rewrite.
func TestDataDriven(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			h := newHarness(t)
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				h.t, h.d = t, d
				h.out.Reset()
				h.run()
				return h.out.String()
			})
		})
	}
}

func (h *harness) run() {
	switch h.d.Cmd {
	case "shard":
		h.cfg = DefaultConfig()
		h.cfg.StatePartitions = int32(h.int("partitions", 1))
		h.cfg.MaxTimeout = h.dur("max-timeout", h.cfg.MaxTimeout)
		h.cfg.IDExpiration = h.dur("expiration", h.cfg.IDExpiration)
		h.cfg.RemoveInterval = h.dur("remove-interval", h.cfg.RemoveInterval)
		h.autoAck = h.str("auto-ack", "true") == "true"
		h.autoMarkers = h.str("auto-markers", "false") == "true"
		h.autoPIDs = h.str("auto-pids", "true") == "true"
		h.nextPID = h.int("first-pid", 1000)
		h.log, h.pending, h.markers = nil, nil, nil
		h.s = NewShard(int32(h.int("p", 0)), h.cfg)
		if h.str("loaded", "true") == "true" {
			h.s.LoadDone(h.now)
			h.drain()
		}
	case "restart":
		// A new coordinator: a new shard replays the log; load with "load".
		h.s = NewShard(h.s.partition, h.cfg)
		for i, r := range h.log {
			if err := h.s.Replay(int64(i), r.Key, r.Value); err != nil {
				h.t.Fatalf("%s: replay of record %d: %v", h.d.Pos, i, err)
			}
		}
		h.pending, h.markers = nil, nil
		h.printf("replayed %d records", len(h.log))
	case "load":
		h.s.LoadDone(h.now)
		h.printf("loaded at %s", h.since(h.now))
		h.drain()
	case "tick":
		h.advance(h.now.Add(h.dur("d", 0)))
	case "due":
		h.printf("now=%s next due=%s", h.since(h.now), h.since(h.s.NextDue()))
	case "init":
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = int16(h.int("v", 5))
		id := h.str("id", "x")
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = int32(h.dur("timeout", time.Minute) / time.Millisecond)
		req.ProducerID, req.ProducerEpoch = h.int("pid", -1), int16(h.int("epoch", -1))
		h.step(req)
	case "add":
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = int16(h.int("v", 3))
		parts := h.parts("parts")
		if req.Version < 4 {
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = h.str("id", "x"), h.int("pid", 1000), int16(h.int("epoch", 0))
			for _, p := range parts {
				if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != p.Topic {
					rt := kmsg.NewAddPartitionsToTxnRequestTopic()
					rt.Topic = p.Topic
					req.Topics = append(req.Topics, rt)
				}
				req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, p.Partition)
			}
		} else {
			for _, id := range strings.Split(h.str("id", "x"), ",") {
				rx := kmsg.NewAddPartitionsToTxnRequestTransaction()
				rx.TransactionalID, rx.ProducerID, rx.ProducerEpoch = id, h.int("pid", 1000), int16(h.int("epoch", 0))
				rx.VerifyOnly = h.str("verify", "false") == "true"
				for _, p := range parts {
					rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
					rt.Topic, rt.Partitions = p.Topic, []int32{p.Partition}
					rx.Topics = append(rx.Topics, rt)
				}
				req.Transactions = append(req.Transactions, rx)
			}
		}
		h.step(req)
	case "offsets":
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version = int16(h.int("v", 4))
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = h.str("id", "x"), h.int("pid", 1000), int16(h.int("epoch", 0))
		req.Group = h.str("group", "g")
		h.step(req)
	case "end":
		req := kmsg.NewPtrEndTxnRequest()
		req.Version = int16(h.int("v", 4))
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = h.str("id", "x"), h.int("pid", 1000), int16(h.int("epoch", 0))
		req.Commit = h.str("commit", "true") == "true"
		h.step(req)
	case "describe":
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = strings.Split(h.str("ids", "x"), ",")
		h.step(req)
	case "list":
		var states []string
		if s := h.str("states", ""); s != "" {
			states = strings.Split(s, ",")
		}
		var pids []int64
		if s := h.str("pids", ""); s != "" {
			for _, f := range strings.Split(s, ",") {
				n, _ := strconv.ParseInt(f, 10, 64)
				pids = append(pids, n)
			}
		}
		txns, unknown := h.s.ListTransactions(h.now, states, pids, h.dur("min", 0))
		for _, t := range txns {
			h.printf("%s pid=%d %s", t.TransactionalID, t.ProducerID, t.TransactionState)
		}
		if len(unknown) > 0 {
			h.printf("unknown states: %v", unknown)
		}
	case "appended":
		var err error
		if e := h.str("err", ""); e != "" {
			err = kerr.ErrorForCode(kerrCode(e))
		}
		for n := h.int("n", 1); n > 0 && len(h.pending) > 0; n-- {
			h.printf("append %d: %v", h.pending[0].ID, err)
			h.ack(err)
		}
		h.drain()
	case "markers":
		h.writeMarkers(h.parts("fail"))
		h.drain()
	case "pids":
		if e := h.str("err", ""); e != "" {
			h.s.ProducerIDsFailed(h.now, kerr.ErrorForCode(kerrCode(e)))
		} else {
			first, n := h.int("first", h.nextPID), h.int("n", 1000)
			h.s.ProducerIDs(h.now, first, n)
			h.nextPID = first + n
		}
		h.drain()
	case "put":
		// A record already in the log (as an earlier coordinator wrote
		// it): restart to load it.
		m := meta{pid: h.int("pid", 1000), epoch: int16(h.int("epoch", 0)), lastPid: h.int("prev-pid", -1),
			timeout: h.dur("timeout", time.Minute), parts: union(h.parts("parts"), nil), updated: h.now}
		for i, n := range stateNames {
			if n == h.str("state", "Empty") {
				m.state = State(i)
			}
		}
		if len(m.parts) > 0 {
			m.start = h.now
		}
		rec := metaRecord(h.str("id", "x"), m)
		h.log = append(h.log, rec)
		h.printf("log: %s", fmtRecord(rec))
	case "state":
		h.out.WriteString(dump(h.s, h.now))
	case "stats":
		st := h.s.Stats()
		for _, n := range stateNames {
			if st.Transactions[n] > 0 {
				h.printf("%s=%d", n, st.Transactions[n])
			}
		}
		h.printf("committed=%d aborted=%d timed-out=%d", st.Committed, st.Aborted, st.TimedOut)
	case "replay-check":
		h.replayCheck()
	default:
		h.t.Fatalf("%s: unknown command %q", h.d.Pos, h.d.Cmd)
	}
}

func kerrCode(name string) int16 {
	for c := int16(-1); c < 200; c++ {
		if e := kerr.ErrorForCode(c); e != nil {
			if ke, ok := e.(*kerr.Error); ok && ke.Message == name {
				return c
			}
		}
	}
	panic("unknown error " + name)
}

// advance moves the clock to to, checking first that a tick just before
// NextDue changes nothing.
func (h *harness) advance(to time.Time) {
	from := h.now
	for {
		due := h.s.NextDue()
		if due.IsZero() || due.After(to) {
			break
		}
		if due.After(h.now) {
			before := dump(h.s, h.now)
			h.s.TickTo(due.Add(-time.Millisecond))
			if rd := h.s.Ready(); len(rd.Appends)+len(rd.Markers)+len(rd.Responses) > 0 || dump(h.s, h.now) != before {
				h.t.Fatalf("%s: a tick before NextDue (%s) changed the shard", h.d.Pos, h.since(due))
			}
			h.now = due
			h.printf("now %s", h.since(h.now))
		}
		h.s.TickTo(h.now)
		h.drain()
		if next := h.s.NextDue(); !next.IsZero() && !next.After(h.now) {
			h.t.Fatalf("%s: NextDue %s stays at or before now after a tick", h.d.Pos, h.since(next))
		}
	}
	if h.now.Equal(to) && to.After(from) {
		return // printed at the last due time
	}
	h.now = to
	h.s.TickTo(h.now)
	h.drain()
	h.printf("now %s", h.since(h.now))
}

// dump is the shard's ids as scripts show them.
func dump(s *Shard, now time.Time) string {
	var b strings.Builder
	for _, id := range sortedIDs(s.txns) {
		t := s.txns[id]
		start := "-"
		if !t.start.IsZero() {
			start = "+" + t.start.Sub(t0).String()
		}
		updated := "-"
		if !t.updated.IsZero() {
			updated = "+" + t.updated.Sub(t0).String()
		}
		fmt.Fprintf(&b, "%s pid=%d epoch=%d last-epoch=%d prev-pid=%d %v timeout=%s parts=%s start=%s updated=%s",
			id, t.pid, t.epoch, t.lastEpoch, t.lastPid, t.state, t.timeout, fmtParts(t.parts), start, updated)
		if t.busy() {
			b.WriteString(" busy")
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		b.WriteString("no transactional ids\n")
	}
	return b.String()
}

// persisted is what a new coordinator must get back from the log: the
// records' fields of every id.
func persisted(s *Shard) string {
	var lines []string
	for id, t := range s.txns {
		if t.epoch < 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %d/%d prev=%d %v %s %s start=%d updated=%d", id, t.pid, t.epoch, t.lastPid,
			t.state, t.timeout, fmtParts(t.parts), millis(t.start), millis(t.updated)))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// replayCheck replays the log into a new shard and compares it with the
// live one (whose writes in flight must have landed).
func (h *harness) replayCheck() {
	r := NewShard(h.s.partition, h.cfg)
	for i, rec := range h.log {
		if err := r.Replay(int64(i), rec.Key, rec.Value); err != nil {
			h.t.Fatalf("%s: replay of record %d: %v", h.d.Pos, i, err)
		}
	}
	if a, b := persisted(h.s), persisted(r); a != b {
		h.t.Fatalf("%s: replay differs:\nlive:\n%s\nreplayed:\n%s", h.d.Pos, a, b)
	}
	h.printf("replay matches (%d records, %d ids)", len(h.log), len(r.txns))
}
