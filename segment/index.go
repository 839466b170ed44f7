package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Index is the node's one Pebble DB, shared by every log on the node. It holds
// each log's offset index, time index, leader-epoch cache, segment records and
// checkpoint (key layout in doc.go). It is safe for concurrent use; each Log
// only touches keys under its own prefix.
type Index struct {
	db *pebble.DB
}

// OpenIndex opens (creating if needed) the Pebble DB in dir on fs.
// cacheBytes sizes Pebble's block cache; 0 picks 8 MiB.
func OpenIndex(fs vfs.FS, dir string, cacheBytes int64) (*Index, error) {
	if cacheBytes <= 0 {
		cacheBytes = 8 << 20
	}
	cache := pebble.NewCache(cacheBytes)
	defer cache.Unref()
	opts := &pebble.Options{
		FS:     fs,
		Cache:  cache,
		Logger: quietLogger{},
		// Index writes are rebuildable from the segments past the recovery
		// point, so they go through the WAL without a sync; checkpoints sync.
		MemTableSize: 4 << 20,
	}
	opts.EnsureDefaults()
	if err := mkdirAllSynced(fs, dir); err != nil {
		return nil, fmt.Errorf("segment: create index dir %s: %w", dir, err)
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("segment: open index %s: %w", dir, err)
	}
	return &Index{db: db}, nil
}

// Close closes the DB. Every Log using it must be closed first.
func (x *Index) Close() error { return x.db.Close() }

// quietLogger drops Pebble's informational chatter; fatal errors still stop
// the process, with the message.
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{})  {}
func (quietLogger) Errorf(string, ...interface{}) {}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

// Key kinds under a log's prefix.
const (
	kindMeta    = 'm' // checkpoint record
	kindOffset  = 'o' // offset index: offset -> position in its segment
	kindTime    = 't' // time index: running max timestamp -> offset
	kindEpoch   = 'e' // leader-epoch cache: epoch -> start offset
	kindSegment = 's' // closed segment record: base offset -> end, next, maxTs
	kindCleaner = 'c' // cleaner checkpoint: the first dirty offset
	kindSwap    = 'w' // a committed swap of cleaned segments not yet renamed
	kindAbort   = 'a' // aborted-transaction index: marker offset -> producer, first offset, LSO
)

// keys builds the keys of one log. A log's prefix is "l" + name + 0x00; topic
// names cannot contain 0x00, so no prefix is a prefix of another.
type keys struct{ prefix []byte }

func newKeys(name string) keys {
	p := make([]byte, 0, len(name)+2)
	p = append(p, 'l')
	p = append(p, name...)
	return keys{prefix: append(p, 0)}
}

func (k keys) kind(kind byte) []byte {
	return append(append(make([]byte, 0, len(k.prefix)+9), k.prefix...), kind)
}

func (k keys) u64(kind byte, v uint64) []byte {
	return binary.BigEndian.AppendUint64(k.kind(kind), v)
}

// appendOffset appends off's offset key to dst: offset without an
// allocation, for the append path's scratch buffer.
func (k keys) appendOffset(dst []byte, off int64) []byte {
	dst = append(append(dst, k.prefix...), kindOffset)
	return binary.BigEndian.AppendUint64(dst, uint64(off))
}

// appendTime appends ts's time key to dst, as appendOffset.
func (k keys) appendTime(dst []byte, ts int64) []byte {
	dst = append(append(dst, k.prefix...), kindTime)
	return binary.BigEndian.AppendUint64(dst, uint64(ts)^(1<<63))
}

// offset keys sort by offset (offsets are never negative).
func (k keys) offset(off int64) []byte { return k.u64(kindOffset, uint64(off)) }

// time keys sort by timestamp: flip the sign bit so negative times sort first.
func (k keys) time(ts int64) []byte { return k.u64(kindTime, uint64(ts)^(1<<63)) }

func (k keys) epoch(e int32) []byte {
	return binary.BigEndian.AppendUint32(k.kind(kindEpoch), uint32(e)^(1<<31))
}

func (k keys) segment(base int64) []byte { return k.u64(kindSegment, uint64(base)) }
func (k keys) meta() []byte              { return k.kind(kindMeta) }
func (k keys) cleaner() []byte           { return k.kind(kindCleaner) }
func (k keys) swap() []byte              { return k.kind(kindSwap) }

// upper returns the first key after every key of kind.
func (k keys) upper(kind byte) []byte { return k.kind(kind + 1) }

// all spans every key of the log.
func (k keys) all() (lo, hi []byte) {
	hi = append([]byte(nil), k.prefix...)
	hi[len(hi)-1] = 1
	return k.prefix, hi
}

func decodeU64(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

// get reads one key; ok is false when it is absent.
func (x *Index) get(key []byte) (val []byte, ok bool, err error) {
	v, closer, err := x.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	val = append([]byte(nil), v...)
	return val, true, closer.Close()
}

// seekLE returns the last key/value in [lo, key] (values copied).
func (x *Index) seekLE(lo, key []byte) (k, v []byte, ok bool, err error) {
	upper := append(append([]byte(nil), key...), 0)
	it, err := x.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: upper})
	if err != nil {
		return nil, nil, false, err
	}
	if it.Last() {
		k = append([]byte(nil), it.Key()...)
		v = append([]byte(nil), it.Value()...)
		ok = true
	}
	return k, v, ok, it.Close()
}

// scan calls fn for every key in [lo, hi) in order; fn's slices are valid only
// during the call.
func (x *Index) scan(lo, hi []byte, fn func(k, v []byte) error) error {
	it, err := x.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

// closeAll closes every closer, keeping the first error.
func closeAll(cs ...io.Closer) error {
	var first error
	for _, c := range cs {
		if c == nil {
			continue
		}
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func decodeU32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

func u64bytes(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func decodeUvarint(b []byte) int64 {
	v, _ := binary.Uvarint(b)
	return int64(v)
}

// mkdirAllSynced creates dir and any missing parents, fsyncing each parent
// whose entries changed, so that a crash cannot lose a directory that files
// were then written into.
func mkdirAllSynced(fs vfs.FS, dir string) error {
	if _, err := fs.Stat(dir); err == nil {
		return nil
	}
	parent := fs.PathDir(dir)
	if parent != dir {
		if err := mkdirAllSynced(fs, parent); err != nil {
			return err
		}
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	d, err := fs.OpenDir(parent)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}
