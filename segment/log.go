package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Log is one partition replica's log. All methods are safe for concurrent
// use. Appends are serialised; reads run concurrently with appends and with
// each other; fsyncs run outside the append lock so appenders never wait on
// the disk unless they ask to (WaitFlushed). Lock order: flushMu, then mu,
// then syncMu (see ARCHITECTURE.md).
type Log struct {
	fs   vfs.FS
	dir  string
	name string
	idx  *Index
	k    keys
	opts Options

	// flushMu serialises Flush, Checkpoint, truncation, retention, Close
	// and a Clean's swap.
	flushMu sync.Mutex
	// cleanMu serialises Clean (clean.go); taken before flushMu.
	cleanMu sync.Mutex

	mu        sync.Mutex
	segs      []*segment // by base offset; the last is the active segment
	logStart  int64
	leo       int64
	epochs    epochCache
	maxTs     int64  // running max batch timestamp over the log (time index)
	tsPoints  tsRing // where maxTs rose most recently (MaxTimestamp)
	lastTsKey int64  // timestamp of the newest time index entry
	pending   []indexEntry
	pendBatch *pebble.Batch // index writes not yet committed to Pebble
	keyBuf    []byte        // scratch for index keys, under mu
	unflushed int64         // records appended since the last fsync
	unflushAt time.Time     // when the oldest unflushed append happened
	dirDirty  bool          // a segment file was created since the last dir sync
	failed    error         // sticky I/O error: see ErrLogFailed
	closed    bool
	shared    bool       // Open has returned: files count against Options.Files
	noFd      bool       // the FS gives no descriptors (in-memory): see Unwritten
	ckpt      metaRecord // last checkpoint written
	gen       uint64     // bumped by every append, truncation and log start move
	ckptGen   uint64     // gen at the last Checkpoint; ckptOK says there was one
	ckptOK    bool
	flushPos  position         // where flushed ends: recovery point candidate
	pstate    producerState    // idempotent producers, at leo (producers.go)
	snaps     []int64          // offsets of the producer-state snapshot files, oldest first
	corrupt   *CorruptionError // the lowest bad batch a scrub found (scrub.go)
	cleanedTo int64            // the cleaner checkpoint: first dirty offset (clean.go)
	// deleteHorizon is the earliest delete horizon (ms) of a tombstone or
	// marker the last Clean kept below cleanedTo; 0: none known. Not
	// persisted (Kafka's latestDeleteHorizon neither): after a restart
	// the next Clean of new dirty data finds them again.
	deleteHorizon int64
	// cutGen counts truncations and deletions of segments: a Clean whose
	// offset map was built before one may not swap (ErrCleanRaced).
	cutGen int64
	// swapInstalled is closed when the Clean swap in flight has put its
	// segments in the list (nil: none in flight); see swapWait.
	swapInstalled chan struct{}

	flushed atomic.Int64 // every offset below is fsynced

	// hints remember where recent reads ended, so that a sequential
	// reader's next Read finds its position without an index lookup.
	hints    [readHints]readHint
	hintNext int // the slot to overwrite next

	syncMu  sync.Mutex
	syncing chan struct{} // closed when the fsync in flight ends; nil if none

	wbAppended int64       // bytes appended since the last writeback was due, under mu
	wbQueued   atomic.Bool // the log waits in its Writeback runner's queue

	keysRequired atomic.Bool // Append refuses null keys (SetKeysRequired)

	markerBuf []byte        // AppendMarker's batch, under mu
	markerHdr []BatchHeader // AppendMarker's headers, under mu
}

// position names a batch boundary: offset and where it sits on disk.
type position struct {
	offset, base, pos int64
	firstTs, maxTs    int64 // of the segment's bytes before pos
}

type indexEntry struct{ offset, pos int64 }

// readHint says that the batch at offset starts at pos in seg. It is checked
// before use (see hintPos), never invalidated.
type readHint struct {
	seg         *segment
	offset, pos int64
}

// readHints is how many concurrent sequential readers (followers and
// consumers of one partition) Read keeps hints for.
const readHints = 4

// AppendInfo describes what an append wrote.
type AppendInfo struct {
	FirstOffset  int64 // base offset of the first batch
	LastOffset   int64 // offset of the last record
	MaxTimestamp int64 // largest batch maxTimestamp appended
	Batches      int
	Records      int64 // sum of lastOffsetDelta+1
	Bytes        int
	Rolled       bool // a new segment was started for it
	// Duplicate: the batch is an idempotent producer's retry of one of
	// its last five batches. Nothing was written; FirstOffset and
	// LastOffset are the original's.
	Duplicate bool
	// Headers are the appended batches' headers, in order, as written
	// (final base offsets and leader epochs), so that the layers above
	// (producer state, metrics) need not parse the records again. Set on
	// success; a new slice the caller owns.
	Headers []BatchHeader
}

// Append writes records (one or more RecordBatch v2) as leader at leader
// epoch epoch: every batch is validated (framing, magic, CRC-32C, then its
// records as Kafka's LogValidator does: validate.go) before anything is
// written, then its baseOffset and partitionLeaderEpoch are rewritten in
// place — records is modified and must not be shared — and the bytes are
// written verbatim in one write. Nothing is written on any error.
//
// An idempotent producer's batch (producer id >= 0) must come alone, and
// is checked against the producer state (producers.go): a retry of one of
// the producer's last five batches writes nothing and answers the
// original's offsets with Duplicate set; an older producer epoch is
// ErrInvalidProducerEpoch; a sequence gap is ErrOutOfOrderSequence.
func (l *Log) Append(records []byte, epoch int32) (AppendInfo, error) {
	c, err := l.Check(records)
	if err != nil {
		return c.info, err
	}
	return l.AppendChecked(c, epoch)
}

// Checked holds a producer's records that passed Append's checks.
type Checked struct {
	records []byte
	info    AppendInfo
	idem    BatchHeader // the idempotent producer's batch, if isIdem
	isIdem  bool
}

// Check runs Append's checks on records (framing, CRC, the records
// themselves) without the log's lock or state. A caller that serialises
// its appends under a lock of its own (the node's replica) checks first,
// outside that lock, so that decompressing and walking one producer's
// batch does not hold up the partition's other producers and fetchers.
// On error the AppendInfo says what was parsed.
func (l *Log) Check(records []byte) (Checked, error) {
	info, err := l.validate(records, true)
	if err != nil {
		return Checked{info: info}, err
	}
	idem, isIdem, err := idempotentBatch(info.Headers)
	if err != nil {
		return Checked{info: info}, err
	}
	return Checked{records: records, info: info, idem: idem, isIdem: isIdem}, nil
}

// AppendChecked is Append of records that passed Check (the producer
// state, the epoch and the write; the records' checks are not repeated).
func (l *Log) AppendChecked(c Checked, epoch int32) (AppendInfo, error) {
	records, info, idem, isIdem := c.records, c.info, c.idem, c.isIdem
	if records == nil {
		return info, fmt.Errorf("%w: no record batch (not from Check)", ErrInvalidBatch)
	}
	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return info, err
	}
	if last, ok := l.epochs.latest(); ok && epoch < last.Epoch {
		l.mu.Unlock()
		return info, fmt.Errorf("%w: append at epoch %d, log is at epoch %d", ErrStaleEpoch, epoch, last.Epoch)
	}
	if isIdem {
		l.pstate.expire(l.opts.Now().UnixMilli(), l.opts.ProducerIDExpiration.Milliseconds(), idem.ProducerID)
		dup, isDup, err := l.pstate.check(idem)
		if err != nil || isDup {
			l.mu.Unlock()
			if isDup {
				info.FirstOffset, info.LastOffset, info.Duplicate = dup.firstOffset, dup.lastOffset, true
			}
			return info, err
		}
	}
	off := l.leo
	p := 0
	for i := range info.Headers {
		h := &info.Headers[i]
		setBaseOffset(records[p:], off)
		setLeaderEpoch(records[p:], epoch)
		h.BaseOffset, h.LeaderEpoch = off, epoch
		off = h.NextOffset()
		p += h.Size()
	}
	return l.appendLocked(records, info) // unlocks
}

// AppendReplicated writes records fetched from the leader: batches that
// already carry their offsets and epochs. The first must start at or after
// the log end offset and each after the previous one: a compacted leader's
// log has offset holes, which its followers copy. An overlap is
// ErrNonContiguous and writes nothing. Epochs must not go backwards.
func (l *Log) AppendReplicated(records []byte) (AppendInfo, error) {
	info, err := l.validate(records, false)
	if err != nil {
		return info, err
	}
	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return info, err
	}
	want := l.leo
	epoch := int32(-1)
	if last, ok := l.epochs.latest(); ok {
		epoch = last.Epoch
	}
	for _, h := range info.Headers {
		if h.BaseOffset < want {
			l.mu.Unlock()
			return info, fmt.Errorf("%w: batch at offset %d, log end is %d", ErrNonContiguous, h.BaseOffset, want)
		}
		if h.LeaderEpoch < epoch {
			l.mu.Unlock()
			return info, fmt.Errorf("%w: batch at offset %d has epoch %d after epoch %d", ErrStaleEpoch, h.BaseOffset, h.LeaderEpoch, epoch)
		}
		epoch = h.LeaderEpoch
		want = h.NextOffset()
	}
	return l.appendLocked(records, info)
}

// idempotentBatch finds the idempotent producer's batch among the
// validated batches' headers: it must be the only one (clients send one
// batch per partition; one per append keeps the duplicate check exact).
func idempotentBatch(headers []BatchHeader) (BatchHeader, bool, error) {
	for _, h := range headers {
		if idempotent(h) {
			if len(headers) > 1 {
				return h, false, fmt.Errorf("%w: an idempotent producer's batch comes alone, not with %d others", ErrInvalidRecord, len(headers)-1)
			}
			return h, true, nil
		}
	}
	return BatchHeader{}, false, nil
}

// validate checks every batch of records, sums them up and collects their
// headers. leader adds the checks of a producer's batch (validate.go).
func (l *Log) validate(records []byte, leader bool) (AppendInfo, error) {
	info := AppendInfo{MaxTimestamp: noTimestamp, Bytes: len(records)}
	if len(records) == 0 {
		return info, fmt.Errorf("%w: no record batch", ErrInvalidBatch)
	}
	var rc recordCheck
	if leader {
		rc = newRecordCheck(l.opts.Now().UnixMilli(), l.opts.TimestampBeforeMaxMs, l.opts.TimestampAfterMaxMs)
		rc.requireKey = l.keysRequired.Load()
	}
	for p := 0; p < len(records); {
		h, n, err := checkBatch(records[p:], l.opts.MaxBatchBytes)
		if err != nil {
			return info, fmt.Errorf("batch %d at byte %d: %w", info.Batches, p, err)
		}
		if int64(n) > l.opts.SegmentBytes {
			return info, fmt.Errorf("%w: batch %d is %d bytes, segment.bytes is %d", ErrBatchTooLarge, info.Batches, n, l.opts.SegmentBytes)
		}
		if leader && !l.opts.SkipRecordCheck {
			if err := rc.batch(records[p:p+n], h); err != nil {
				return info, fmt.Errorf("batch %d at byte %d: %w", info.Batches, p, err)
			}
		}
		info.Headers = append(info.Headers, h)
		info.Batches++
		info.Records += int64(h.LastOffsetDelta) + 1
		info.MaxTimestamp = max(info.MaxTimestamp, h.MaxTimestamp)
		p += n
	}
	return info, nil
}

func (l *Log) writable() error {
	switch {
	case l.closed:
		return ErrClosed
	case l.failed != nil:
		return l.failed
	}
	return nil
}

// appendLocked writes validated records whose offsets are final at the log
// end, then updates the indexes. Called with mu held; releases it.
func (l *Log) appendLocked(records []byte, info AppendInfo) (AppendInfo, error) {
	now := l.opts.Now()
	act := l.active()
	if l.shouldRoll(act, len(records), now) {
		if err := l.rollLocked(); err != nil {
			l.mu.Unlock()
			return info, err
		}
		act = l.active()
		info.Rolled = true
	}
	if err := l.openLocked(act); err != nil {
		l.failed = fmt.Errorf("%w: %v", ErrLogFailed, err)
		l.mu.Unlock()
		return info, l.failed
	}
	if _, err := act.file.WriteAt(records, act.size); err != nil {
		l.failed = fmt.Errorf("%w: write %s at %d: %v", ErrLogFailed, act.path, act.size, err)
		l.mu.Unlock()
		return info, l.failed
	}
	info.FirstOffset = l.leo
	if len(info.Headers) > 0 {
		info.FirstOffset = info.Headers[0].BaseOffset // past a hole, replicated
	}
	p := int64(0)
	for _, h := range info.Headers {
		l.indexBatchLocked(l.pendBatch, act, h, act.size+p)
		l.trackBatchLocked(l.pendBatch, h, records[p:p+int64(h.Size())], now.UnixMilli())
		p += int64(h.Size())
	}
	act.size += int64(len(records))
	info.LastOffset = l.leo - 1
	if l.unflushed == 0 {
		l.unflushAt = now
	}
	l.unflushed += info.Records
	flush := l.unflushed >= l.opts.FlushMessages
	writeback := l.markWritebackLocked(len(records))
	var err error
	if len(l.pending) >= maxPending {
		err = l.commitPendingLocked()
	}
	l.mu.Unlock()
	if err == nil && flush {
		err = l.Flush()
	}
	if err == nil && writeback {
		l.requestWriteback()
	}
	return info, err
}

// maxPending bounds index entries held in memory before a Pebble commit.
const maxPending = 128

// indexBatchLocked accounts for a batch written at pos of seg: offsets,
// timestamps, the leader-epoch cache and the sparse offset and time indexes,
// whose writes go into wb (the pending batch when appending, recovery's batch
// when scanning).
func (l *Log) indexBatchLocked(wb *pebble.Batch, seg *segment, h BatchHeader, pos int64) {
	if seg.firstTs == noTimestamp {
		seg.firstTs = h.MaxTimestamp
	}
	if h.MaxTimestamp > seg.maxTs {
		seg.maxTs, seg.maxTsOff = h.MaxTimestamp, h.BaseOffset
	}
	if h.MaxTimestamp > l.maxTs {
		l.maxTs = h.MaxTimestamp
		l.tsPoints.push(tsPoint{ts: h.MaxTimestamp, off: h.BaseOffset, next: h.NextOffset()})
	}
	if pos > 0 && pos-seg.lastIndexPos >= l.opts.IndexIntervalBytes {
		seg.lastIndexPos = pos
		l.pending = append(l.pending, indexEntry{h.BaseOffset, pos})
		// Set copies key and value into the batch, so a scratch key serves:
		// a fresh one per entry was an allocation per batch once the log's
		// name made it too long for the stack.
		l.keyBuf = l.k.appendOffset(l.keyBuf[:0], h.BaseOffset)
		var v [binary.MaxVarintLen64]byte
		wb.Set(l.keyBuf, binary.AppendUvarint(v[:0], uint64(pos)), nil)
		if l.maxTs > l.lastTsKey {
			l.lastTsKey = l.maxTs
			l.keyBuf = l.k.appendTime(l.keyBuf[:0], l.maxTs)
			var o [8]byte
			binary.BigEndian.PutUint64(o[:], uint64(h.BaseOffset))
			wb.Set(l.keyBuf, o[:], nil)
		}
	}
	if l.epochs.assign(h.LeaderEpoch, h.BaseOffset) {
		wb.Set(l.k.epoch(h.LeaderEpoch), u64bytes(h.BaseOffset), nil)
	}
	seg.next = h.NextOffset()
	l.leo = seg.next
	l.gen++
}

// commitPendingLocked commits buffered index writes to Pebble without a sync:
// everything past the recovery point is rebuilt by recovery anyway.
func (l *Log) commitPendingLocked() error {
	if l.pendBatch.Empty() {
		l.pending = l.pending[:0]
		return nil
	}
	err := l.pendBatch.Commit(pebble.NoSync)
	l.pendBatch.Reset()
	l.pending = l.pending[:0]
	if err != nil {
		l.failed = fmt.Errorf("%w: index write: %v", ErrLogFailed, err)
		return l.failed
	}
	return nil
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

func (l *Log) shouldRoll(act *segment, n int, now time.Time) bool {
	if act.sealed {
		return true
	}
	if act.size == 0 {
		return false
	}
	if act.size+int64(n) > l.opts.SegmentBytes {
		return true
	}
	return act.firstTs != noTimestamp && now.UnixMilli()-act.firstTs >= l.opts.SegmentMs.Milliseconds()
}

// rollLocked seals the active segment at its size and starts a new one at the
// log end offset.
func (l *Log) rollLocked() error {
	old := l.active()
	if l.opts.WritebackBytes > 0 {
		old.wbDue = old.size // its tail is older than anything after the roll
	}
	if !old.sealed {
		old.sealed = true
		l.pendBatch.Set(l.k.segment(old.base), segRecord{end: old.size, next: old.next, firstTs: old.firstTs, maxTs: old.maxTs}.encode(), nil)
	}
	if err := l.commitPendingLocked(); err != nil {
		return err
	}
	// The producer state at the new segment's base, so that recovery
	// scans at most the segments after it. Best effort: without it,
	// recovery falls back to an older snapshot.
	_ = l.writeSnapshotLocked()
	seg, err := l.createSegment(l.leo)
	if err != nil {
		l.failed = fmt.Errorf("%w: %v", ErrLogFailed, err)
		return l.failed
	}
	l.segs = append(l.segs, seg)
	return nil
}

// createSegment creates an empty segment file for base offset base.
func (l *Log) createSegment(base int64) (*segment, error) {
	path := l.fs.PathJoin(l.dir, segmentName(base))
	f, err := l.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("create segment %s: %w", path, err)
	}
	l.dirDirty = true
	s := &segment{base: base, path: path, next: base, firstTs: noTimestamp, maxTs: noTimestamp, maxTsOff: -1}
	l.setFileLocked(s, f)
	return s, nil
}

// Chunk is the result of Read: whole batches copied out of one segment.
// Segment and Position name the same bytes on disk for a zero-copy (sendfile)
// path.
type Chunk struct {
	Data     []byte // whole batches; aliases the buffer passed to Read
	First    int64  // base offset of the first batch
	Next     int64  // offset after the last batch
	Segment  int64  // base offset of the segment read
	Position int64  // file position of Data[0]
	Size     int64  // len(Data)
	LogEnd   int64  // log end offset when read
	LogStart int64  // log start offset when read
}

// Read returns whole batches from the one containing offset, at most maxBytes
// of them but always at least one (Kafka KIP-74), none at or past upTo (the
// high watermark for consumers; the log end for replicas). No record is
// decoded: only batch headers are read. buf is reused when large enough.
// Reading at the log end (or at upTo) returns an empty chunk; before the log
// start or past the log end, ErrOffsetOutOfRange.
//
// Offsets a compaction removed (holes) are skipped: a read in one returns
// the batches after it, from the next segment when the hole ends its own.
func (l *Log) Read(offset int64, maxBytes int, upTo int64, buf []byte) (Chunk, error) {
	from := offset
	for {
		at, c, err := l.locate(from, upTo)
		if err != nil || at.seg == nil {
			c.First, c.Next = offset, offset
			return c, err
		}
		out, err := at.find(c, func(pos int64, c Chunk) (Chunk, error) {
			return l.readFrom(at.seg, pos, at.end, from, maxBytes, at.upTo, buf, c)
		})
		if err == nil && out.Size > 0 {
			out, err = l.verifyChunk(at.seg, at.vs, from, out)
		}
		l.releaseRead(at.seg, out, err)
		if next, again := at.retry(err); again {
			from = max(from, next)
			continue
		}
		return out, err
	}
}

// retry says whether a read of at must be done again after err, and from
// which offset: the next segment's base after a hole at the end of at's
// segment, the same offset after a Clean swapped the segment out.
func (at readStart) retry(err error) (int64, bool) {
	switch {
	case errors.Is(err, errHoleToEnd):
		return at.nextBase, true
	case errors.Is(err, errSegmentReplaced):
		at.l.swapWait()
		return at.offset, true
	}
	return 0, false
}

// errHoleToEnd: no batch of the segment holds the offset or follows it
// (a compaction removed them); the read goes on at the next segment.
// errSegmentReplaced: a Clean swapped the segment out between the read's
// start and its index lookup; the read starts again.
var (
	errHoleToEnd       = errors.New("segment: offset in a hole at the end of its segment")
	errSegmentReplaced = errors.New("segment: segment replaced by a clean while read")
)

// readStart is where a read begins: the segment holding its offset (with a
// reference taken), that segment's end and the read's upper bound when
// located, and the position of a batch at or before the offset from a
// read hint or a pending index entry (-1: ask the index).
type readStart struct {
	l      *Log
	seg    *segment
	end    int64
	upTo   int64
	offset int64
	pos    int64
	hinted bool
	vs     verifyState
	// nextBase is where the next segment starts (the log end when seg is
	// the active one).
	nextBase int64
}

// locate finds where a read at offset up to upTo starts, under mu. With no
// error and a nil seg there is nothing to read (c is the answer); with a
// seg, the caller owns a reference to it.
func (l *Log) locate(offset, upTo int64) (readStart, Chunk, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := Chunk{LogEnd: l.leo, LogStart: l.logStart, First: offset, Next: offset}
	if l.closed {
		return readStart{}, c, ErrClosed
	}
	if offset < l.logStart || offset > l.leo {
		return readStart{}, c, fmt.Errorf("%w: offset %d, log holds [%d, %d)", ErrOffsetOutOfRange, offset, l.logStart, l.leo)
	}
	upTo = min(upTo, l.leo)
	if offset >= upTo {
		return readStart{}, c, nil
	}
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset }) - 1
	seg := l.segs[i]
	at := readStart{l: l, seg: seg, end: seg.size, upTo: upTo, offset: offset, pos: l.hintPos(seg, offset),
		vs: verifyState{fromDisk: seg.fromDisk, vLo: seg.vLo, vHi: seg.vHi}, nextBase: l.leo}
	if i+1 < len(l.segs) {
		at.nextBase = l.segs[i+1].base
	}
	at.hinted = at.pos >= 0
	if !at.hinted {
		at.pos = l.pendingPos(seg, offset)
	}
	if err := l.pinLocked(seg); err != nil {
		return readStart{}, c, err
	}
	c.Segment = seg.base
	return at, c, nil
}

// find runs read from the located position, and again from the index's
// position when there was none or a hint did not find the offset's batch
// where it said.
func (at readStart) find(c Chunk, read func(pos int64, c Chunk) (Chunk, error)) (Chunk, error) {
	var err error
	out := c
	if at.pos >= 0 {
		out, err = read(at.pos, c)
	}
	if at.pos < 0 || at.hinted && (err != nil || out.First != at.offset) {
		var pos int64
		if pos, err = at.l.lookupPos(at.seg, at.offset); err == nil {
			out, err = read(pos, c)
		}
	}
	return out, err
}

// hintPos returns the position of the batch starting at offset in seg from
// a read hint, or -1. A hint is used only while seg still holds offset:
// truncation only cuts a segment (later appends go to a new one), so the
// bytes before its end never move. Read still checks that the batch found
// there starts at offset.
func (l *Log) hintPos(seg *segment, offset int64) int64 {
	for _, h := range l.hints {
		if h.seg == seg && h.offset == offset && offset < seg.next && h.pos+BatchHeaderSize <= seg.size {
			return h.pos
		}
	}
	return -1
}

// releaseRead is release for Read: it also records where c ended as a hint
// for the next sequential Read, replacing the hint c started from if any.
func (l *Log) releaseRead(seg *segment, c Chunk, err error) {
	l.hint(seg, c, err)
	l.release(seg)
}

// hint records where c ended as a hint for the next sequential read.
func (l *Log) hint(seg *segment, c Chunk, err error) {
	if err != nil || c.Size == 0 {
		return
	}
	l.mu.Lock()
	slot := -1
	for i, h := range l.hints {
		if h.seg == seg && h.offset == c.First {
			slot = i
		}
	}
	if slot < 0 {
		slot = l.hintNext
		l.hintNext = (l.hintNext + 1) % readHints
	}
	l.hints[slot] = readHint{seg: seg, offset: c.Next, pos: c.Position + c.Size}
	l.mu.Unlock()
}

// pendingPos finds offset's index position among not-yet-committed entries
// of seg, or -1 when Pebble must answer.
func (l *Log) pendingPos(seg *segment, offset int64) int64 {
	if seg != l.active() || len(l.pending) == 0 || offset < l.pending[0].offset {
		return -1
	}
	j := sort.Search(len(l.pending), func(j int) bool { return l.pending[j].offset > offset }) - 1
	return l.pending[j].pos
}

// lookupPos returns the position of the last indexed batch at or before
// offset in seg (0 when none is indexed).
func (l *Log) lookupPos(seg *segment, offset int64) (int64, error) {
	_, v, ok, err := l.idx.seekLE(l.k.offset(seg.base), l.k.offset(offset))
	if seg.replaced.Load() {
		return 0, errSegmentReplaced // v may describe the new file
	}
	if err != nil || !ok {
		return 0, err
	}
	return decodeUvarint(v), nil
}

// readFrom reads from pos (a batch boundary at or before offset's batch) to
// find offset's batch and the whole batches after it. The batch holding
// offset starts less than IndexIntervalBytes after pos, so one read of
// IndexIntervalBytes+maxBytes finds it and the data in the common case.
func (l *Log) readFrom(seg *segment, pos, end, offset int64, maxBytes int, upTo int64, buf []byte, c Chunk) (Chunk, error) {
	if pos >= end {
		return c, errHoleToEnd
	}
	want := min(end-pos, l.opts.IndexIntervalBytes+int64(maxBytes)+BatchHeaderSize)
	buf = grow(buf, int(want))
	n, err := readFull(seg.file, buf[:want], pos)
	if err != nil {
		return c, fmt.Errorf("segment: read %s at %d: %w", seg.path, pos, err)
	}
	b := buf[:n]
	start := -1
	p := 0
	for p+offLastOffsetDelta+4 <= len(b) {
		size := frameLength(b[p:], l.opts.MaxBatchBytes)
		if size < 0 {
			return c, fmt.Errorf("%w: bad batch length at %s position %d", ErrCorruptBatch, seg.path, pos+int64(p))
		}
		if nextOffsetAt(b[p:]) > offset {
			start = p
			break
		}
		p += size
	}
	if start < 0 {
		if pos+int64(p) >= end {
			return c, errHoleToEnd
		}
		if p == 0 {
			return c, fmt.Errorf("%w: no batch holds offset %d at %s position %d", ErrCorruptBatch, offset, seg.path, pos)
		}
		// offset's batch starts beyond what was read: only when the index is
		// sparser than IndexIntervalBytes (e.g. a changed setting). Walk on.
		return l.readFrom(seg, pos+int64(p), end, offset, maxBytes, upTo, buf, c)
	}
	if baseOffsetAt(b[start:]) >= upTo {
		return c, nil // offset is in a hole that reaches upTo: nothing to read yet
	}
	q := start
	for q+BatchHeaderSize <= len(b) {
		size := frameLength(b[q:], l.opts.MaxBatchBytes)
		if size < 0 || q+size > len(b) {
			break
		}
		if q > start && (q-start+size > maxBytes || baseOffsetAt(b[q:]) >= upTo) {
			break
		}
		c.Next = nextOffsetAt(b[q:])
		q += size
	}
	if q == start {
		// The first batch did not fit in what was read (it is larger than
		// maxBytes, or starts far from the index entry): read from it.
		size := frameLength(b[start:], l.opts.MaxBatchBytes)
		if len(b)-start < BatchHeaderSize || size < 0 || pos+int64(start+size) > end {
			return c, fmt.Errorf("%w: truncated batch at %s position %d", ErrCorruptBatch, seg.path, pos+int64(start))
		}
		return l.readFrom(seg, pos+int64(start), end, offset, max(size, maxBytes), upTo, buf, c)
	}
	c.First = baseOffsetAt(b[start:])
	c.Data = b[start:q]
	c.Position = pos + int64(start)
	c.Size = int64(q - start)
	return c, nil
}

func grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	return make([]byte, n)
}

// readFull reads len(b) bytes at off, or fewer at end of file.
func readFull(f vfs.File, b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := f.ReadAt(b[n:], off+int64(n))
		n += m
		if errors.Is(err, io.EOF) || (err == nil && m == 0) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// release drops a reference taken under mu; the last one closes and deletes
// a removed segment's file.
func (l *Log) release(seg *segment) {
	l.mu.Lock()
	seg.refs--
	drop := seg.removed && seg.refs == 0
	var f vfs.File
	if seg.refs == 0 && (drop || seg.closeLate) {
		f = l.takeFileLocked(seg)
	}
	l.mu.Unlock()
	if f != nil {
		_ = f.Close()
	}
	if drop {
		_ = l.fs.Remove(seg.path + deletedSuffix)
	}
	if fs := l.opts.Files; fs.over() {
		fs.sweep(nil, nil) // files pinned past the budget may go now
	}
}

// LogStartOffset, LogEndOffset and FlushedOffset report the log's bounds:
// the first readable offset, the next offset to be written, and the first
// offset not yet fsynced.
func (l *Log) LogStartOffset() int64 { l.mu.Lock(); defer l.mu.Unlock(); return l.logStart }
func (l *Log) LogEndOffset() int64   { l.mu.Lock(); defer l.mu.Unlock(); return l.leo }
func (l *Log) FlushedOffset() int64  { return l.flushed.Load() }

// Size is the log's size in bytes over all segments.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// Segments returns the base offsets of the log's segments, oldest first.
func (l *Log) Segments() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]int64, len(l.segs))
	for i, s := range l.segs {
		out[i] = s.base
	}
	return out
}

// Epochs returns a copy of the leader-epoch cache.
func (l *Log) Epochs() []EpochEntry { l.mu.Lock(); defer l.mu.Unlock(); return l.epochs.clone() }

// LatestEpoch returns the newest leader epoch in the log, or UndefinedEpoch.
func (l *Log) LatestEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.epochs.latest(); ok {
		return e.Epoch
	}
	return UndefinedEpoch
}

// EpochForOffset returns the leader epoch under which offset was written,
// by the leader-epoch cache, or UndefinedEpoch when the cache does not
// cover it: the leaderEpoch that ListOffsets (v4+) answers with a
// timestamp lookup, as Kafka's epochForOffset.
func (l *Log) EpochForOffset(offset int64) int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset < l.logStart || offset >= l.leo {
		return UndefinedEpoch
	}
	return l.epochs.epochFor(offset)
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101/279): the largest
// epoch at or below epoch that this log knows and the offset where it ends.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.endOffsetFor(epoch, l.leo)
}

// Err reports the sticky I/O error that failed the log, if any.
func (l *Log) Err() error { l.mu.Lock(); defer l.mu.Unlock(); return l.failed }
