package soak

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-log/sluice/segment"
	"github.com/sluice-log/sluice/tools/cluster"
	"github.com/sluice-log/sluice/tools/soak/powerfs"
)

// powerLoss runs every node on powerfs (a journal of what was made
// durable) and, between a SIGKILL and the restart, throws away what the
// node had not fsynced.
type powerLoss struct{}

func journalPath(n cluster.Node) string {
	return filepath.Join(filepath.Dir(n.DataDir), "power.journal")
}

func (*powerLoss) nodeArgs(n cluster.Node) []string {
	return []string{"--" + powerfs.Flag, journalPath(n)}
}

// drop is run on a killed node: it cuts its files back to what was
// durable and says what it threw away, in bytes and, for the segment
// files of the partitions in tps, in offsets (one Dropped per partition).
// A node without a journal is an error (powerfs.ErrNoJournal): it did not
// run on powerfs.
func (p *powerLoss) drop(l cluster.Layout, id int32, tps []TP) (powerfs.Stats, []Dropped, error) {
	for _, n := range l.Nodes {
		if n.ID == id {
			byTP := map[TP]*Dropped{}
			cut := time.Now() // the node is down: its power went no later
			st, err := powerfs.RecoverWith(journalPath(n), func(c powerfs.Cut) error {
				droppedBatches(id, c, tps, byTP)
				return nil
			})
			if err != nil {
				return st, nil, fmt.Errorf("node %d: %w", id, err)
			}
			var out []Dropped
			for _, tp := range sortedTPs(byTP) {
				d := *byTP[tp]
				d.Cut = cut
				out = append(out, d)
			}
			return st, out, nil
		}
	}
	return powerfs.Stats{}, nil, fmt.Errorf("power loss: no node %d", id)
}

// Dropped is what one power loss cut from one replica's log of one
// partition: the record batches at or past the length the replica had
// fsynced (segment files are named by base offset and hold whole
// batches, segment/doc.go). A record acknowledged at an offset in
// [FirstOffset, LastOffset] before the power loss healed may be lost by it.
type Dropped struct {
	Node        int32 `json:"node"`
	TP          TP    `json:"tp"`
	FirstOffset int64 `json:"first_offset"`
	LastOffset  int64 `json:"last_offset"` // inclusive
	Batches     int   `json:"batches"`
	Bytes       int64 `json:"bytes"`
	// FirstWritten and LastWritten are the dropped batches' oldest base
	// timestamp and newest max timestamp (the producers' create times):
	// how long the data had been waiting for an fsync.
	FirstWritten time.Time `json:"first_written"`
	LastWritten  time.Time `json:"last_written"`
	// Cut is when the replica's files were cut (it was already down).
	Cut time.Time `json:"cut"`
}

func (d Dropped) String() string {
	return fmt.Sprintf("node %d %s offsets %d–%d (%d batches, %d bytes)", d.Node, d.TP, d.FirstOffset, d.LastOffset, d.Batches, d.Bytes)
}

// segmentTP returns the partition (of tps) whose log holds the segment
// file at path: <log.dir>/<topic>-<partition>/<20-digit base>.log.
func segmentTP(path string, tps []TP) (TP, bool) {
	name := filepath.Base(path)
	if len(name) != 20+len(".log") || !strings.HasSuffix(name, ".log") {
		return TP{}, false
	}
	if _, err := strconv.ParseUint(name[:20], 10, 64); err != nil {
		return TP{}, false
	}
	dir := filepath.Base(filepath.Dir(path))
	i := strings.LastIndexByte(dir, '-')
	if i < 0 {
		return TP{}, false
	}
	p, err := strconv.ParseInt(dir[i+1:], 10, 32)
	if err != nil {
		return TP{}, false
	}
	tp := TP{Topic: dir[:i], Partition: int32(p)}
	return tp, slices.Contains(tps, tp)
}

// droppedBatches adds to byTP the batches of c's file that end past c.From
// (the ones the cut drops, whole or in part). The file is walked from its
// start, so that a cut inside a batch still finds its header. A file that
// cannot be read adds nothing (its bytes are still counted in the Stats).
func droppedBatches(node int32, c powerfs.Cut, tps []TP, byTP map[TP]*Dropped) {
	tp, ok := segmentTP(c.Path, tps)
	if !ok {
		return
	}
	b, err := os.ReadFile(c.Path)
	if err != nil {
		return
	}
	b = b[:min(int64(len(b)), c.Size)]
	it := segment.NewBatchIter(b)
	pos := int64(0)
	for h, batch, ok := it.Next(); ok; h, batch, ok = it.Next() {
		end := pos + int64(len(batch))
		if end > c.From {
			d := byTP[tp]
			if d == nil {
				d = &Dropped{Node: node, TP: tp, FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(),
					FirstWritten: time.UnixMilli(h.BaseTimestamp), LastWritten: time.UnixMilli(h.MaxTimestamp)}
				byTP[tp] = d
			}
			d.Batches++
			d.FirstOffset, d.LastOffset = min(d.FirstOffset, h.BaseOffset), max(d.LastOffset, h.LastOffset())
			if t := time.UnixMilli(h.BaseTimestamp); t.Before(d.FirstWritten) {
				d.FirstWritten = t
			}
			if t := time.UnixMilli(h.MaxTimestamp); t.After(d.LastWritten) {
				d.LastWritten = t
			}
		}
		pos = end
	}
	if d := byTP[tp]; d != nil {
		d.Bytes += c.Size - c.From
	}
}

// droppedSummary is "; offsets dropped: soak/0 120–190 …", each
// partition's union over its replicas, for a fault's effect line.
func droppedSummary(ds []Dropped) string {
	if len(ds) == 0 {
		return "; no segment batch dropped"
	}
	union := map[TP][2]int64{}
	for _, d := range ds {
		u, ok := union[d.TP]
		if !ok {
			u = [2]int64{d.FirstOffset, d.LastOffset}
		}
		union[d.TP] = [2]int64{min(u[0], d.FirstOffset), max(u[1], d.LastOffset)}
	}
	var parts []string
	for _, tp := range sortedTPs(union) {
		parts = append(parts, fmt.Sprintf("%s %d–%d", tp, union[tp][0], union[tp][1]))
	}
	return "; offsets dropped: " + strings.Join(parts, ", ")
}
