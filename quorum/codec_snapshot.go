package quorum

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"slices"
)

// The binary encoding of a snapshot (SnapshotVersion 2):
//
//	snapshot := "SLQS" uvarint(version=2) uvarint(applied index) item* end
//	item     := uvarint(kind) uvarint(item version) uvarint(len) payload[len]
//	end      := uvarint(0) uvarint(1) uvarint(len) uvarint(items) crc32c[4]
//
// Items, in this order: one "cluster" item (kind 1: the JSON of the image
// without its brokers and topics: cluster id, epochs, producer ids, SCRAM
// credentials, ACLs, quotas, broker configs; small, and a field added
// there later is kept without a format change), one "broker" item (kind
// 2) per broker by id, one "topic" item (kind 3: name, id, configs, every
// partition as in create_topic records) per topic by name. The end item
// counts the items before it and holds the CRC-32C (Castagnoli, big
// endian) of every byte before it, so a truncated or damaged snapshot is
// refused rather than loaded short. The same image always writes the
// same bytes.
//
// A JSON snapshot (version 1, written by older builds) starts with '{';
// ReadSnapshot reads both.

const snapshotMagic = "SLQS"

// Item kinds of a binary snapshot; part of the on-disk format.
const (
	itemEnd     = 0
	itemCluster = 1
	itemBroker  = 2
	itemTopic   = 3
)

// snapshotItemVersion is the version of every item this build writes and
// the newest it reads.
const snapshotItemVersion = 1

// maxSnapshotItem bounds one item (a topic of about 10 million
// partitions); a larger length is corruption.
const maxSnapshotItem = 256 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteSnapshot writes an image in the snapshot encoding.
func WriteSnapshot(w io.Writer, im *Image, applied uint64) error {
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 64<<10)
	var e encoder
	e.b = append(e.b, snapshotMagic...)
	e.uvarint(SnapshotVersion)
	e.uvarint(applied)
	if _, err := bw.Write(e.b); err != nil {
		return err
	}
	items := 0
	item := func(kind uint64, body []byte) error {
		var h encoder
		h.uvarint(kind)
		h.uvarint(snapshotItemVersion)
		h.uvarint(uint64(len(body)))
		if _, err := bw.Write(h.b); err != nil {
			return err
		}
		_, err := bw.Write(body)
		items++
		return err
	}

	rest := *im
	rest.Brokers, rest.Topics = nil, nil
	cluster, err := json.Marshal(&rest)
	if err != nil {
		return fmt.Errorf("quorum: snapshot: %w", err)
	}
	if err := item(itemCluster, cluster); err != nil {
		return err
	}
	for _, id := range im.SortedBrokers() {
		e.b = e.b[:0]
		e.broker(im.Brokers[id])
		if err := item(itemBroker, e.b); err != nil {
			return err
		}
	}
	for _, name := range im.SortedTopics() {
		t := im.Topics[name]
		e.b = e.b[:0]
		e.str(t.Name)
		e.uuid(t.ID)
		e.strMap(t.Configs)
		e.partitions(t.Partitions)
		if err := item(itemTopic, e.b); err != nil {
			return err
		}
	}
	e.b = e.b[:0]
	e.uvarint(uint64(items))
	if err := bw.Flush(); err != nil {
		return err
	}
	e.b = binary.BigEndian.AppendUint32(e.b, crc.Sum32())
	var h encoder
	h.uvarint(itemEnd)
	h.uvarint(snapshotItemVersion)
	h.uvarint(uint64(len(e.b)))
	if _, err := w.Write(append(h.b, e.b...)); err != nil {
		return err
	}
	return nil
}

// ReadSnapshot reads what WriteSnapshot wrote, or a JSON snapshot of an
// older build.
func ReadSnapshot(r io.Reader) (*Image, uint64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	first, err := br.Peek(1)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: snapshot: %v", ErrCorruptEntry, err)
	}
	var im *Image
	var applied uint64
	if first[0] == '{' {
		im, applied, err = readJSONSnapshot(br)
	} else {
		im, applied, err = readBinarySnapshot(br)
	}
	if err != nil {
		return nil, 0, err
	}
	im.reindex()
	if err := im.checkImage(); err != nil {
		return nil, 0, fmt.Errorf("%w: snapshot: %v", ErrCorruptEntry, err)
	}
	return im, applied, nil
}

// snapshotFile is the JSON encoding of a snapshot (version 1), which
// builds before the binary encoding wrote.
type snapshotFile struct {
	Version int    `json:"v"`
	Applied uint64 `json:"applied"`
	Image   *Image `json:"image"`
}

const jsonSnapshotVersion = 1

func readJSONSnapshot(r io.Reader) (*Image, uint64, error) {
	var s snapshotFile
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return nil, 0, fmt.Errorf("%w: snapshot: %v", ErrCorruptEntry, err)
	}
	if s.Version != jsonSnapshotVersion || s.Image == nil {
		return nil, 0, fmt.Errorf("%w: JSON snapshot version %d (JSON snapshots are version %d)", ErrCorruptEntry, s.Version, jsonSnapshotVersion)
	}
	return s.Image, s.Applied, nil
}

// writeJSONSnapshot writes a snapshot as builds before the binary
// encoding did: tests use it to make JSON-era snapshots, benchmarks to
// compare.
func writeJSONSnapshot(w io.Writer, im *Image, applied uint64) error {
	return json.NewEncoder(w).Encode(snapshotFile{Version: jsonSnapshotVersion, Applied: applied, Image: im})
}

// crcReader hashes every byte read through it.
type crcReader struct {
	r *bufio.Reader
	h hash.Hash32
	b [1]byte
}

func (c *crcReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.b[0] = b
		c.h.Write(c.b[:])
	}
	return b, err
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	return n, err
}

func corruptSnapshot(format string, args ...any) error {
	return fmt.Errorf("%w: snapshot: %s", ErrCorruptEntry, fmt.Sprintf(format, args...))
}

func readBinarySnapshot(br *bufio.Reader) (*Image, uint64, error) {
	cr := &crcReader{r: br, h: crc32.New(castagnoli)}
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(cr, magic); err != nil || string(magic) != snapshotMagic {
		return nil, 0, corruptSnapshot("neither JSON nor the binary encoding (magic %q)", magic)
	}
	version, err := binary.ReadUvarint(cr)
	if err != nil || version != SnapshotVersion {
		return nil, 0, corruptSnapshot("version %d (this build reads 1 and %d)", version, SnapshotVersion)
	}
	applied, err := binary.ReadUvarint(cr)
	if err != nil {
		return nil, 0, corruptSnapshot("applied index: %v", err)
	}
	var im *Image
	var buf []byte
	items := 0
	for {
		sum := cr.h.Sum32()
		kind, err1 := binary.ReadUvarint(cr)
		iv, err2 := binary.ReadUvarint(cr)
		size, err3 := binary.ReadUvarint(cr)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, 0, corruptSnapshot("item %d: %v (truncated?)", items, err)
		}
		if iv < 1 || iv > snapshotItemVersion {
			return nil, 0, corruptSnapshot("item %d of kind %d has version %d (this build reads up to %d): written by a newer build?", items, kind, iv, snapshotItemVersion)
		}
		if size > maxSnapshotItem {
			return nil, 0, corruptSnapshot("item %d of %d bytes", items, size)
		}
		if buf, err = readChunked(cr, buf[:0], int(size)); err != nil {
			return nil, 0, corruptSnapshot("item %d: %v (truncated?)", items, err)
		}
		d := decoder{b: buf}
		if kind == itemEnd {
			n := d.uvarint()
			crc := binary.BigEndian.Uint32(append(d.raw(4), 0, 0, 0, 0))
			d.done()
			switch {
			case d.err != nil:
				return nil, 0, fmt.Errorf("snapshot end: %w", d.err)
			case n != uint64(items):
				return nil, 0, corruptSnapshot("%d items read, the end says %d", items, n)
			case crc != sum:
				return nil, 0, corruptSnapshot("CRC-32C %08x, the end says %08x", sum, crc)
			case im == nil:
				return nil, 0, corruptSnapshot("no cluster item")
			}
			if _, err := br.Peek(1); err != io.EOF {
				return nil, 0, corruptSnapshot("bytes after the end")
			}
			return im, applied, nil
		}
		switch {
		case kind == itemCluster && im == nil:
			im = &Image{}
			if err := json.Unmarshal(buf, im); err != nil {
				return nil, 0, corruptSnapshot("cluster item: %v", err)
			}
			im.Brokers, im.Topics = map[int32]*Broker{}, map[string]*Topic{}
		case im == nil:
			return nil, 0, corruptSnapshot("item %d of kind %d before the cluster item", items, kind)
		case kind == itemBroker:
			b := d.broker()
			d.done()
			if d.err == nil && im.Brokers[b.ID] != nil {
				d.fail("broker %d twice", b.ID)
			}
			im.Brokers[b.ID] = b
		case kind == itemTopic:
			t := &Topic{Name: d.str(), ID: d.uuid(), Configs: d.strMap(), Partitions: d.partitions()}
			d.done()
			if d.err == nil && im.Topics[t.Name] != nil {
				d.fail("topic %q twice", t.Name)
			}
			im.Topics[t.Name] = t
		default:
			return nil, 0, corruptSnapshot("item %d of unknown kind %d", items, kind)
		}
		if d.err != nil {
			return nil, 0, fmt.Errorf("snapshot item %d: %w", items, d.err)
		}
		items++
	}
}

// readChunked reads n bytes into buf, growing it a MiB at a time, so a
// corrupt length fails at the end of the input instead of allocating it.
func readChunked(r io.Reader, buf []byte, n int) ([]byte, error) {
	for len(buf) < n {
		k := min(n-len(buf), 1<<20)
		buf = slices.Grow(buf, k)
		if _, err := io.ReadFull(r, buf[len(buf):len(buf)+k]); err != nil {
			return buf, err
		}
		buf = buf[:len(buf)+k]
	}
	return buf, nil
}

// Flags of a broker in a snapshot.
const (
	brFenced        = 1 << 0
	brShuttingDown  = 1 << 1
	brCleanShutdown = 1 << 2
	brAllFlags      = brFenced | brShuttingDown | brCleanShutdown
)

func (e *encoder) broker(b *Broker) {
	var flags byte
	if b.Fenced {
		flags |= brFenced
	}
	if b.ShuttingDown {
		flags |= brShuttingDown
	}
	if b.CleanShutdown {
		flags |= brCleanShutdown
	}
	e.varint(int64(b.ID))
	e.varint(b.Epoch)
	e.endpoints(b.Endpoints)
	e.str(b.Rack)
	e.b = append(e.b, flags)
	e.strs(b.OfflineLogDirs)
}

func (d *decoder) broker() *Broker {
	b := &Broker{ID: d.int32(), Epoch: d.varint(), Endpoints: d.endpoints(), Rack: d.str()}
	flags := d.byte1()
	if flags&^brAllFlags != 0 {
		d.fail("broker flags %#x", flags)
	}
	b.Fenced, b.ShuttingDown, b.CleanShutdown = flags&brFenced != 0, flags&brShuttingDown != 0, flags&brCleanShutdown != 0
	b.OfflineLogDirs = d.strs()
	return b
}

// snapshotBytes is WriteSnapshot into memory.
func snapshotBytes(im *Image, applied uint64) []byte {
	var b bytes.Buffer
	if err := WriteSnapshot(&b, im, applied); err != nil {
		panic(fmt.Sprintf("quorum: snapshot to memory: %v", err))
	}
	return b.Bytes()
}
