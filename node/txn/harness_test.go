package txn

import (
	"errors"
	"fmt"
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
	t   *testing.T
	d   *datadriven.TestData
	out strings.Builder
	s   *Shard
	cfg Config
	now time.Time

	reqID       uint64
	autoAck     bool
	autoMarkers bool
	autoPIDs    bool
	nextPID     int64
	pending     []Append  // not yet Appended (autoAck off)
	markers     []Markers // not yet written (autoMarkers off)
	log         []Record  // what was Appended(nil), in order
	open        map[uint64]string
}

func newHarness(t *testing.T) *harness {
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

// parts parses t/0,t/1.
func (h *harness) parts(key string) []TopicPartition {
	s, ok := h.arg(key)
	if !ok || s == "" {
		return nil
	}
	var out []TopicPartition
	for _, f := range strings.Split(s, ",") {
		i := strings.LastIndex(f, "/")
		p, err := strconv.Atoi(f[i+1:])
		if i < 0 || err != nil {
			h.t.Fatalf("%s: bad partition %q", h.d.Pos, f)
		}
		out = append(out, TopicPartition{f[:i], int32(p)})
	}
	return out
}

func (h *harness) since(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return "+" + t.Sub(t0).String()
}

func fmtParts(ps []TopicPartition) string {
	var b []string
	for _, p := range ps {
		b = append(b, fmt.Sprintf("%s/%d", p.Topic, p.Partition))
	}
	return "[" + strings.Join(b, " ") + "]"
}

func codeName(code int16) string {
	if code == 0 {
		return "OK"
	}
	if e := kerr.ErrorForCode(code); e != nil {
		var ke *kerr.Error
		if errors.As(e, &ke) {
			return ke.Message
		}
	}
	return strconv.Itoa(int(code))
}

// fmtRecord is a record as scripts show it.
func fmtRecord(r Record) string {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(r.Key); err != nil {
		return "bad key: " + err.Error()
	}
	if r.Value == nil {
		return "tombstone " + k.TransactionalID
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(r.Value); err != nil {
		return "bad value: " + err.Error()
	}
	var ps []TopicPartition
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			ps = append(ps, TopicPartition{t.Topic, p})
		}
	}
	ms := func(x int64) string {
		if x < 0 {
			return "-1"
		}
		return "+" + time.UnixMilli(x).Sub(t0).String()
	}
	s := fmt.Sprintf("%s pid=%d epoch=%d %v timeout=%dms parts=%s start=%s updated=%s",
		k.TransactionalID, v.ProducerID, v.ProducerEpoch, State(v.State), v.TimeoutMillis, fmtParts(ps),
		ms(v.StartTimestamp), ms(v.LastUpdateTimestamp))
	if v.PreviousProducerID >= 0 {
		s += fmt.Sprintf(" prev-pid=%d", v.PreviousProducerID)
	}
	if v.ClientTransactionVersion >= 2 {
		s += " tv2"
	}
	if v.NextProducerID >= 0 {
		s += fmt.Sprintf(" next-pid=%d", v.NextProducerID)
	}
	return s
}

// step hands the shard a request and drains.
func (h *harness) step(body kmsg.Request) {
	h.reqID++
	name := strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", body), "*kmsg."), "Request")
	h.open[h.reqID] = name
	h.printf("r%d: %s v%d", h.reqID, name, body.GetVersion())
	h.s.Step(h.now, Request{ID: h.reqID, Body: body})
	h.drain()
}

// drain prints and executes Ready until nothing is left.
func (h *harness) drain() {
	for {
		rd := h.s.Ready()
		if len(rd.Appends) == 0 && len(rd.Markers) == 0 && len(rd.Responses) == 0 && !rd.NeedProducerIDs {
			return
		}
		for _, r := range rd.Responses {
			name, ok := h.open[r.ID]
			if !ok {
				h.t.Fatalf("%s: response to r%d, which is not open", h.d.Pos, r.ID)
			}
			delete(h.open, r.ID)
			h.printf("  r%d ← %s %s", r.ID, name, fmtResponse(r.Body))
		}
		for _, a := range rd.Appends {
			for _, rec := range a.Records {
				h.printf("  append %d: %s", a.ID, fmtRecord(rec))
			}
		}
		for _, m := range rd.Markers {
			kind := "ABORT"
			if m.Commit {
				kind = "COMMIT"
			}
			h.printf("  markers %d: %s %s pid=%d epoch=%d %s", m.ID, kind, m.TransactionalID, m.ProducerID, m.ProducerEpoch, fmtParts(m.Partitions))
		}
		h.pending = append(h.pending, rd.Appends...)
		h.markers = append(h.markers, rd.Markers...)
		if rd.NeedProducerIDs {
			h.printf("  need producer ids")
		}
		if rd.NeedProducerIDs && h.autoPIDs {
			h.s.ProducerIDs(h.now, h.nextPID, 1000)
			h.printf("  producer ids %d-%d", h.nextPID, h.nextPID+999)
			h.nextPID += 1000
		}
		if h.autoAck {
			for len(h.pending) > 0 {
				h.ack(nil)
			}
		}
		if h.autoMarkers {
			for len(h.markers) > 0 {
				h.writeMarkers(nil)
			}
		}
	}
}

func (h *harness) ack(err error) {
	a := h.pending[0]
	h.pending = h.pending[1:]
	if err == nil {
		h.log = append(h.log, a.Records...)
	}
	h.s.Appended(h.now, a.ID, err)
}

func (h *harness) writeMarkers(failed []TopicPartition) {
	if len(h.markers) == 0 {
		h.t.Fatalf("%s: no markers to write", h.d.Pos)
	}
	m := h.markers[0]
	h.markers = h.markers[1:]
	if len(failed) > 0 {
		h.printf("  markers %d written but %s", m.ID, fmtParts(failed))
	} else {
		h.printf("  markers %d written", m.ID)
	}
	h.s.MarkersWritten(h.now, m.ID, failed)
}

func fmtResponse(b kmsg.Response) string {
	switch r := b.(type) {
	case *kmsg.InitProducerIDResponse:
		return fmt.Sprintf("%s pid=%d epoch=%d", codeName(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	case *kmsg.AddOffsetsToTxnResponse:
		return codeName(r.ErrorCode)
	case *kmsg.EndTxnResponse:
		if r.Version >= 5 {
			return fmt.Sprintf("%s pid=%d epoch=%d", codeName(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
		}
		return codeName(r.ErrorCode)
	case *kmsg.AddPartitionsToTxnResponse:
		var b []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				b = append(b, fmt.Sprintf("%s/%d:%s", t.Topic, p.Partition, codeName(p.ErrorCode)))
			}
		}
		for _, x := range r.Transactions {
			for _, t := range x.Topics {
				for _, p := range t.Partitions {
					b = append(b, fmt.Sprintf("%s:%s/%d:%s", x.TransactionalID, t.Topic, p.Partition, codeName(p.ErrorCode)))
				}
			}
		}
		return strings.Join(b, " ")
	case *kmsg.DescribeTransactionsResponse:
		var b []string
		for _, s := range r.TransactionStates {
			var ps []TopicPartition
			for _, t := range s.Topics {
				for _, p := range t.Partitions {
					ps = append(ps, TopicPartition{t.Topic, p})
				}
			}
			start := "-1"
			if s.StartTimestamp >= 0 {
				start = "+" + time.UnixMilli(s.StartTimestamp).Sub(t0).String()
			}
			b = append(b, fmt.Sprintf("\n    %s %s state=%s pid=%d epoch=%d timeout=%dms start=%s parts=%s",
				s.TransactionalID, codeName(s.ErrorCode), s.State, s.ProducerID, s.ProducerEpoch, s.TimeoutMillis, start, fmtParts(ps)))
		}
		return strings.Join(b, "")
	}
	return fmt.Sprintf("%T", b)
}
