package group

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// t0 is the scripts' time zero; times print as offsets from it.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// harness drives one Shard from a script, keeping the log of what was
// Appended so that it can be replayed.
type harness struct {
	t       *testing.T
	d       *datadriven.TestData
	out     strings.Builder
	s       *Shard
	cfg     Config
	now     time.Time
	reqID   uint64
	autoAck bool
	pending []Append          // Appends not yet Appended (autoAck off)
	log     []logRec          // what was Appended(nil), in order
	open    map[uint64]string // requests stepped and not yet answered
	// topicSet is what the last topics (or racks) command set.
	topicSet map[string]TopicInfo
}

func newHarness(t *testing.T) *harness {
	idSeeds = nil
	return &harness{t: t, now: t0, open: map[uint64]string{}}
}

func (h *harness) printf(format string, args ...any) { fmt.Fprintf(&h.out, format+"\n", args...) }

func (h *harness) arg(key string) (string, bool) {
	for _, a := range h.d.CmdArgs {
		if a.Key == key {
			return strings.Join(a.Vals, ","), true
		}
	}
	return "", false
}

func (h *harness) str(key, def string) string {
	if v, ok := h.arg(key); ok {
		return v
	}
	return def
}

func (h *harness) int(key string, def int64) int64 {
	s, ok := h.arg(key)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		h.t.Fatalf("%s: %s=%q: %v", h.d.Pos, key, s, err)
	}
	return n
}

func (h *harness) dur(key string, def time.Duration) time.Duration {
	s, ok := h.arg(key)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		h.t.Fatalf("%s: %s=%q: %v", h.d.Pos, key, s, err)
	}
	return d
}

func (h *harness) list(key string) []string {
	s, ok := h.arg(key)
	if !ok || s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func (h *harness) strp(key string) *string {
	if s, ok := h.arg(key); ok {
		return &s
	}
	return nil
}

var uuidRE = regexp.MustCompile(`-([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})`)

// idSeeds are the seeds of the shards a script loaded, in order: an id
// of the k-th (k > 1) shows as prefix#seq@k.
var idSeeds []uint64

func seedLabel(seed uint64) string {
	for i, s := range idSeeds {
		if s == seed {
			if i == 0 {
				return ""
			}
			return "@" + strconv.Itoa(i+1)
		}
	}
	idSeeds = append(idSeeds, seed)
	return seedLabel(seed)
}

// short writes a generated member id prefix-UUID as prefix#seq.
func short(id string) string {
	return uuidRE.ReplaceAllStringFunc(id, func(m string) string {
		sub := uuidRE.FindStringSubmatch(m)
		var p [5]uint64
		for i := range p {
			p[i], _ = strconv.ParseUint(sub[i+1], 16, 64)
		}
		seed := p[0]<<32 | p[1]<<16 | p[2]
		return "#" + strconv.FormatUint(p[3]<<48|p[4], 10) + seedLabel(seed)
	})
}

// long is the inverse of short.
func (h *harness) long(id string) string {
	prefix, seq, ok := strings.Cut(id, "#")
	if !ok {
		return id
	}
	a := h.s.idSeed
	if len(idSeeds) > 0 {
		a = idSeeds[0]
	}
	if seq, k, ok := strings.Cut(seq, "@"); ok {
		n, _ := strconv.Atoi(k)
		a = idSeeds[n-1]
		id = prefix + "#" + seq
	}
	seq = strings.TrimPrefix(id, prefix+"#")
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		h.t.Fatalf("%s: bad member id %q", h.d.Pos, id)
	}
	return fmt.Sprintf("%s-%08x-%04x-%04x-%04x-%012x", prefix, a>>32, (a>>16)&0xffff, a&0xffff, (n>>48)&0xffff, n&0xffffffffffff)
}

func (h *harness) since(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Sub(t0).String()
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

// logRec is one record of the harness's log, with its batch: the
// producer of a transactional batch (pid >= 0), or a control batch
// (marker) ending pid's transaction.
type logRec struct {
	Record
	pid            int64
	marker, commit bool
}

// logAppend adds a's records to log as the driver would write them.
func logAppend(log []logRec, a Append) []logRec {
	pid := int64(-1)
	if a.Transactional {
		pid = a.ProducerID
	}
	for _, r := range a.Records {
		log = append(log, logRec{Record: r, pid: pid})
	}
	return log
}

// replayLog replays log into s, as node/coord does.
func replayLog(s *Shard, log []logRec) error {
	for i, r := range log {
		var err error
		switch {
		case r.marker:
			s.ReplayMarker(r.pid, r.commit)
		case r.pid >= 0:
			err = s.ReplayTxn(int64(i), r.pid, r.Key, r.Value)
		default:
			err = s.Replay(int64(i), r.Key, r.Value)
		}
		if err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
	}
	return nil
}

// step hands one request to the shard and prints what comes out.
func (h *harness) step(body kmsg.Request) {
	h.reqID++
	h.open[h.reqID] = kmsg.NameForKey(body.Key())
	h.s.Step(h.now, Request{ID: h.reqID, ClientID: h.str("client", "c"), ClientHost: "/10.0.0.1", Body: body})
	h.printf("r%d: %s v%d", h.reqID, kmsg.NameForKey(body.Key()), body.GetVersion())
	h.drain()
}

// drain prints Ready (and acknowledges Appends when autoAck).
func (h *harness) drain() {
	for {
		rd := h.s.Ready()
		for _, r := range rd.Responses {
			if _, ok := h.open[r.ID]; !ok {
				h.t.Fatalf("%s: response to r%d, which is not waiting", h.d.Pos, r.ID)
			}
			delete(h.open, r.ID)
			h.printf("  r%d ← %s", r.ID, h.fmtResponse(r.Body))
		}
		for _, a := range rd.Appends {
			if a.Transactional {
				h.printf("  append %d (transactional: producer %d epoch %d):", a.ID, a.ProducerID, a.ProducerEpoch)
			} else {
				h.printf("  append %d:", a.ID)
			}
			for _, rec := range a.Records {
				h.printf("    %s", fmtRecord(rec))
			}
		}
		if !h.autoAck {
			h.pending = append(h.pending, rd.Appends...)
		}
		if len(rd.Responses) == 0 && len(rd.Appends) == 0 {
			return
		}
		if h.autoAck {
			for _, a := range rd.Appends {
				h.log = logAppend(h.log, a)
				h.s.Appended(h.now, a.ID, nil)
			}
		}
	}
}

// appended answers the oldest pending Append (or id=N), err=NAME for a
// failure.
func (h *harness) appended() {
	if len(h.pending) == 0 {
		h.t.Fatalf("%s: no Append pending", h.d.Pos)
	}
	i := 0
	if id := h.int("id", 0); id != 0 {
		i = slices.IndexFunc(h.pending, func(a Append) bool { return a.ID == uint64(id) })
	}
	a := h.pending[i]
	h.pending = slices.Delete(h.pending, i, i+1)
	var err error
	if name, ok := h.arg("err"); ok {
		err = errors.New(name)
		for c := int16(1); c < 150; c++ {
			if ke, ok := kerr.ErrorForCode(c).(*kerr.Error); ok && ke.Message == name {
				err = fmt.Errorf("append: %w", ke)
			}
		}
	} else {
		h.log = logAppend(h.log, a)
	}
	h.printf("appended %d: %v", a.ID, errOrOK(err))
	h.s.Appended(h.now, a.ID, err)
	h.drain()
}

func errOrOK(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// advance moves the clock to, checking on the way that NextDue is exact:
// a tick just before it changes nothing.
func (h *harness) advance(to time.Time) {
	for {
		due := h.s.NextDue()
		if due.IsZero() || due.After(to) {
			h.quietTick(to)
			return
		}
		if before := due.Add(-time.Millisecond); before.After(h.now) {
			h.quietTick(before)
		}
		h.now = due
		h.s.TickTo(due)
		h.printf("tick %s", h.since(due))
		h.drain()
	}
}

func (h *harness) quietTick(to time.Time) {
	before := h.dump(h.s)
	h.now = to
	h.s.TickTo(to)
	rd := h.s.Ready()
	if after := h.dump(h.s); after != before || len(rd.Appends)+len(rd.Responses) > 0 {
		h.t.Fatalf("%s: a tick to %s, before NextDue, changed the shard:\n%s\n---\n%s", h.d.Pos, h.since(to), before, after)
	}
}
