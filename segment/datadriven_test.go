package segment

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestScripts runs the scripts in testdata/scripts/*.txt against a log on a
// crashable in-memory FS. Regenerate expectations with -rewrite.
//
//	open [segment-bytes=N] [index-interval=N] [retention-ms=N] [retention-bytes=N] [segment-ms=N] [producer-expiry-ms=N]
//	append epoch=E ts=T [records=N] [tag=S]         leader append of one batch
//	append-replicated base=O epoch=E ts=T [records=N] [tag=S]
//	read offset=O [max-bytes=N] [up-to=O]            batches returned
//	truncate offset=O | truncate-fully offset=O | advance-start offset=O
//	retention now=T hw=O                             now in ms
//	flush | checkpoint | close | reopen | crash      crash: power cut keeping only synced bytes
//	clock now=T                                      the clock for appends (segment.ms)
//	state | epoch-end epoch=E | epoch-of offset=O | offset-for-ts ts=T | max-ts [up-to=O]
//	scan-batches [from=O] [to=O]                     batch headers in [from, to)
//	flip offset=O [at=N]     flip byte N (default 70: a record) of the batch holding O, through the vfs
//	read-span offset=O [max-bytes=N] [up-to=O]      ReadSpan's batches
//	scrub [due=T]            ScrubNext, once per segment at most, for segments last scrubbed before T (default: now)
//	corruption | truncate-corrupt                    Corruption, TruncateBeforeCorruption
//	producers                                        the idempotent-producer state
//	snapshots | corrupt-snapshot offset=O            producer-state snapshot files
//	producer-recovery                                how the last open rebuilt it
//	marker pid=P [pepoch=E] [abort] [coord=C] [ts=T] [epoch=LE]   AppendMarker
//	txns [from=O] [to=O]     first unstable offset, open transactions, AbortedTxns(from, to)
//
// append's pid=P [pepoch=E] [seq=S] [attrs=A] make it an idempotent
// producer's batch (attrs: 16 transactional, 32 control). The cleaner's
// commands (append-kv, candidate, clean, dump, kv) are in clean_test.go.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/scripts", func(t *testing.T, path string) {
		s := &script{t: t, mem: vfs.NewCrashableMem()}
		defer s.closeAll()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := s.run(d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

type script struct {
	t    *testing.T
	mem  *vfs.MemFS
	idx  *Index
	l    *Log
	opts Options
	now  int64
	rep  RecoveryReport
}

func (s *script) closeAll() {
	if s.l != nil {
		_ = s.l.Close()
	}
	if s.idx != nil {
		_ = s.idx.Close()
	}
}

func (s *script) reopen() (RecoveryReport, error) {
	var err error
	if s.idx == nil {
		if s.idx, err = OpenIndex(s.mem, "/data/index", 1<<20); err != nil {
			return RecoveryReport{}, err
		}
	}
	s.l, s.rep, err = Open(s.mem, "/data/t-0", "t-0", s.idx, s.opts)
	return s.rep, err
}

func (s *script) arg(d *datadriven.TestData, key string, def int64) int64 {
	t := s.t
	if !d.HasArg(key) {
		return def
	}
	var v int64
	d.ScanArgs(t, key, &v)
	return v
}

func (s *script) run(d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "open":
		s.opts = Options{
			SegmentBytes:         s.arg(d, "segment-bytes", 1<<20),
			IndexIntervalBytes:   s.arg(d, "index-interval", 4096),
			RetentionMs:          time.Duration(s.arg(d, "retention-ms", -1)) * time.Millisecond,
			RetentionBytes:       s.arg(d, "retention-bytes", -1),
			SegmentMs:            time.Duration(s.arg(d, "segment-ms", 1e9)) * time.Millisecond,
			Now:                  func() time.Time { return time.UnixMilli(s.now) },
			ProducerIDExpiration: time.Duration(s.arg(d, "producer-expiry-ms", 0)) * time.Millisecond,
		}
		rep, err := s.reopen()
		if err != nil {
			return "", err
		}
		return report(rep) + s.state(), nil
	case "clock":
		s.now = s.arg(d, "now", 0)
		return "", nil
	case "append", "append-replicated":
		n := int(s.arg(d, "records", 1))
		tag := "v"
		if d.HasArg("tag") {
			d.ScanArgs(s.t, "tag", &tag)
		}
		b := batchOf(s.arg(d, "ts", 0), tag, n)
		if d.HasArg("pid") {
			setProducer(b, s.arg(d, "pid", -1), int16(s.arg(d, "pepoch", 0)), int32(s.arg(d, "seq", 0)), int16(s.arg(d, "attrs", 0)))
		}
		var info AppendInfo
		var err error
		if d.Cmd == "append" {
			info, err = s.l.Append(b, int32(s.arg(d, "epoch", 0)))
		} else {
			setBaseOffset(b, s.arg(d, "base", 0))
			setLeaderEpoch(b, int32(s.arg(d, "epoch", 0)))
			info, err = s.l.AppendReplicated(b)
		}
		if err != nil {
			return "", err
		}
		if info.Duplicate {
			return fmt.Sprintf("duplicate of offsets %d..%d\n", info.FirstOffset, info.LastOffset), nil
		}
		return fmt.Sprintf("offsets %d..%d rolled=%v\n", info.FirstOffset, info.LastOffset, info.Rolled), nil
	case "read":
		c, err := s.l.Read(s.arg(d, "offset", 0), int(s.arg(d, "max-bytes", 1<<20)), s.arg(d, "up-to", 1<<62), nil)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "segment %d, next %d\n", c.Segment, c.Next)
		for p := 0; p < len(c.Data); {
			h, n, err := checkBatch(c.Data[p:], DefaultMaxBatchBytes)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "  batch %d..%d epoch=%d ts=%d %s\n", h.BaseOffset, h.LastOffset(), h.LeaderEpoch, h.MaxTimestamp, firstValue(c.Data[p:p+n]))
			p += n
		}
		return b.String(), nil
	case "truncate":
		return s.then(s.l.TruncateTo(s.arg(d, "offset", 0)))
	case "truncate-fully":
		return s.then(s.l.TruncateFullyAndStartAt(s.arg(d, "offset", 0)))
	case "advance-start":
		return s.then(s.l.AdvanceLogStart(s.arg(d, "offset", 0)))
	case "retention":
		res, err := s.l.EnforceRetention(time.UnixMilli(s.arg(d, "now", 0)), s.arg(d, "hw", 1<<62))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("deleted %d segments, %d bytes\n", res.SegmentsDeleted, res.BytesDeleted) + s.state(), nil
	case "flush":
		return s.then(s.l.Flush())
	case "checkpoint":
		return s.then(s.l.Checkpoint())
	case "close":
		err := s.l.Close()
		s.l = nil
		return "", err
	case "reopen", "crash":
		if d.Cmd == "crash" {
			// Power cut: only fsynced bytes and directory entries survive.
			clone := s.mem.CrashClone(vfs.CrashCloneCfg{})
			s.closeAll()
			s.mem, s.idx, s.l = clone, nil, nil
		} else if s.l != nil {
			if err := s.l.Close(); err != nil {
				return "", err
			}
		}
		rep, err := s.reopen()
		if err != nil {
			return "", err
		}
		return report(rep) + s.state(), nil
	case "state":
		return s.state(), nil
	case "scan-batches":
		var b strings.Builder
		err := s.l.ScanBatches(s.arg(d, "from", 0), s.arg(d, "to", 1<<62), func(h BatchHeader) error {
			fmt.Fprintf(&b, "%d..%d epoch=%d ts=%d records=%d", h.BaseOffset, h.LastOffset(), h.LeaderEpoch, h.MaxTimestamp, h.RecordCount)
			if h.ProducerID >= 0 {
				fmt.Fprintf(&b, " pid=%d pepoch=%d seq=%d..%d", h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.LastSequence())
			}
			if h.IsTransactional() {
				b.WriteString(" txn")
			}
			if h.IsControl() {
				b.WriteString(" control")
			}
			b.WriteString("\n")
			return nil
		})
		if err != nil {
			return "", err
		}
		if b.Len() == 0 {
			return "no batches\n", nil
		}
		return b.String(), nil
	case "flip":
		return "", s.flip(s.arg(d, "offset", 0), s.arg(d, "at", 70))
	case "read-span":
		sp, err := s.l.ReadSpan(s.arg(d, "offset", 0), int(s.arg(d, "max-bytes", 1<<20)), s.arg(d, "up-to", 1<<62))
		if err != nil {
			return "", err
		}
		defer sp.Release()
		return fmt.Sprintf("segment %d, batches %d..%d, position %d, %d bytes\n", sp.Segment, sp.First, sp.Next-1, sp.Position, sp.Size), nil
	case "scrub":
		var b strings.Builder
		// Each sealed segment once: a scrub stamps it with the script's clock.
		for range s.l.Segments() {
			res, ok, err := s.l.ScrubNext(time.UnixMilli(s.arg(d, "due", s.now)), nil)
			if err != nil {
				return "", err
			}
			if !ok {
				break
			}
			fmt.Fprintf(&b, "segment %d: %d batches, %d bytes", res.Segment, res.Batches, res.Bytes)
			if res.Corrupt != nil {
				fmt.Fprintf(&b, "; corrupt at position %d, offset %d", res.Corrupt.Pos, res.Corrupt.Offset)
			}
			b.WriteString("\n")
		}
		if b.Len() == 0 {
			return "nothing due\n", nil
		}
		return b.String(), nil
	case "corruption":
		c := s.l.Corruption()
		if c == nil {
			return "none\n", nil
		}
		return fmt.Sprintf("segment %d position %d offset %d\n", c.Segment, c.Pos, c.Offset), nil
	case "truncate-corrupt":
		end, err := s.l.TruncateBeforeCorruption()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("log end %d\n", end) + s.state(), nil
	case "producers":
		return s.producers(), nil
	case "marker", "txns", "lso":
		return s.txn(d)
	case "snapshots":
		l := s.l
		l.mu.Lock()
		defer l.mu.Unlock()
		names, err := s.mem.List("/data/t-0")
		if err != nil {
			return "", err
		}
		var files []string
		for _, n := range names {
			if strings.Contains(n, snapSuffix) {
				files = append(files, n)
			}
		}
		sort.Strings(files)
		return fmt.Sprintf("files=[%s] known=%v\n", strings.Join(files, " "), l.snaps), nil
	case "corrupt-snapshot":
		path := "/data/t-0/" + snapshotName(s.arg(d, "offset", 0))
		f, err := s.mem.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			return "", err
		}
		defer f.Close()
		var b [1]byte
		if _, err := f.ReadAt(b[:], 20); err != nil {
			return "", err
		}
		b[0] ^= 0xff
		if _, err := f.WriteAt(b[:], 20); err != nil {
			return "", err
		}
		return "", f.Sync()
	case "producer-recovery":
		r := s.rep.Producers
		return fmt.Sprintf("snapshot=%d bad=%d scanned=%d err=%v\n", r.Snapshot, r.BadSnapshots, r.BatchesScanned, r.Err), nil
	case "epoch-of":
		return fmt.Sprintf("offset %d: epoch %d\n", s.arg(d, "offset", 0), s.l.EpochForOffset(s.arg(d, "offset", 0))), nil
	case "epoch-end":
		e, off := s.l.EndOffsetForEpoch(int32(s.arg(d, "epoch", 0)))
		return fmt.Sprintf("epoch %d ends at %d\n", e, off), nil
	case "offset-for-ts":
		off, ts, ok, err := s.l.OffsetForTimestamp(s.arg(d, "ts", 0))
		if err != nil {
			return "", err
		}
		if !ok {
			return "none\n", nil
		}
		return fmt.Sprintf("offset %d (record ts %d)\n", off, ts), nil
	case "max-ts":
		off, ts, ok, err := s.l.MaxTimestamp(s.arg(d, "up-to", 1<<62))
		if err != nil {
			return "", err
		}
		if !ok {
			return "none\n", nil
		}
		return fmt.Sprintf("offset %d (record ts %d)\n", off, ts), nil
	}
	return s.runClean(d) // clean_test.go
}

// flip inverts byte at of the batch holding offset in its segment file,
// through the log's vfs, as a disk's bit rot would: the log is not told.
func (s *script) flip(offset, at int64) error {
	l := s.l
	l.mu.Lock()
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset }) - 1
	seg := l.segs[i]
	pos, _, err := l.batchStart(seg, offset)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	f, err := s.mem.OpenReadWrite(seg.path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], pos+at); err != nil {
		return err
	}
	b[0] ^= 0xff
	_, err = f.WriteAt(b[:], pos+at)
	return err
}

// producers prints the log's idempotent-producer state.
func (s *script) producers() string {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []int64
	for id := range l.pstate.producers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var b strings.Builder
	fmt.Fprintf(&b, "lossy=%v\n", l.pstate.lossy)
	for _, id := range ids {
		e := l.pstate.producers[id]
		fmt.Fprintf(&b, "pid=%d epoch=%d last-ts=%d:", id, e.epoch, e.lastTs)
		if e.txnFirst >= 0 {
			fmt.Fprintf(&b, " txn@%d", e.txnFirst)
		}
		if e.coordEpoch >= 0 {
			fmt.Fprintf(&b, " coord=%d", e.coordEpoch)
		}
		for _, pb := range e.batches {
			fmt.Fprintf(&b, " seq %d..%d@%d..%d", pb.firstSeq, pb.lastSeq, pb.firstOffset, pb.lastOffset)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// then is the state after an operation that returned err.
func (s *script) then(err error) (string, error) {
	if err != nil {
		return "", err
	}
	return s.state(), nil
}

func (s *script) state() string {
	l := s.l
	var segs []string
	for _, b := range l.Segments() {
		segs = append(segs, fmt.Sprint(b))
	}
	var eps []string
	for _, e := range l.Epochs() {
		eps = append(eps, fmt.Sprintf("%d@%d", e.Epoch, e.StartOffset))
	}
	return fmt.Sprintf("start=%d end=%d flushed=%d segments=[%s] epochs=[%s]\n",
		l.LogStartOffset(), l.LogEndOffset(), l.FlushedOffset(), strings.Join(segs, " "), strings.Join(eps, " "))
}

func report(r RecoveryReport) string {
	if r.Clean {
		return "recovery: clean\n"
	}
	s := fmt.Sprintf("recovery: scanned %d batches from %d", r.BatchesScanned, r.ScannedFrom)
	if r.CutReason != "" {
		s += fmt.Sprintf("; cut %d bytes (%d batches), %d segments deleted", r.BytesCut, r.BatchesCut, r.SegmentsDeleted)
	}
	return s + "\n"
}

// firstValue returns the first record of a batch: its value when its
// key is null (BuildBatch's records), else key=value; "(empty)" when the
// cleaner left the batch empty.
func firstValue(b []byte) string {
	h := parseHeader(b)
	out := "(empty)"
	if err := eachRecord(b, h, func(r record) bool {
		if out = r.String(); r.keyNull {
			out = string(recordValue(r.raw))
		}
		return false
	}); err != nil {
		return err.Error()
	}
	return out
}

func varint(b []byte) (int64, int) {
	var ux uint64
	var s uint
	for i, c := range b {
		if c < 0x80 {
			ux |= uint64(c) << s
			x := int64(ux >> 1)
			if ux&1 != 0 {
				x = ^x
			}
			return x, i + 1
		}
		ux |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, 0
}
