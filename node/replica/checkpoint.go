package replica

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// hwCheckpointFile is Kafka's replication-offset-checkpoint: every hosted
// partition's high watermark, so that a restarted replica does not show
// consumers a high watermark below what they already read. Format (Kafka's):
// a version line "0", a count line, then "topic partition offset" lines.
const hwCheckpointFile = "replication-offset-checkpoint"

// readHWCheckpoint reads the checkpoint in dir; a missing file is empty.
func readHWCheckpoint(fs vfs.FS, dir string) (map[TP]int64, error) {
	f, err := fs.Open(fs.PathJoin(dir, hwCheckpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return map[TP]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	return parseHWCheckpoint(b)
}

func parseHWCheckpoint(b []byte) (map[TP]int64, error) {
	out := map[TP]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	bad := func(line int, what string) error {
		return fmt.Errorf("%s line %d: %s", hwCheckpointFile, line, what)
	}
	if !sc.Scan() || sc.Text() != "0" {
		return nil, bad(1, "want version 0")
	}
	if !sc.Scan() {
		return nil, bad(2, "missing count")
	}
	count, err := strconv.Atoi(sc.Text())
	if err != nil || count < 0 {
		return nil, bad(2, "bad count")
	}
	for i := range count {
		if !sc.Scan() {
			return nil, bad(3+i, "missing entry")
		}
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			return nil, bad(3+i, "want: topic partition offset")
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || off < 0 {
			return nil, bad(3+i, "bad partition or offset")
		}
		out[TP{f[0], int32(p)}] = off
	}
	return out, nil
}

// WriteHWCheckpoint replaces the high-watermark checkpoint durably with
// the open replicas' high watermarks: a temporary file, fsync, rename,
// directory fsync. When nothing changed since the last one it wrote, it
// writes nothing: idle replicas cost no fsyncs.
func (m *Manager) WriteHWCheckpoint() error {
	reps := m.Replicas()
	slices.SortFunc(reps, func(a, b *Replica) int {
		return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(reps))
	for _, r := range reps {
		fmt.Fprintf(&b, "%s %d %d\n", r.topic, r.partition, r.HighWatermark())
	}
	m.hwWritten.Lock()
	defer m.hwWritten.Unlock()
	if bytes.Equal(b.Bytes(), m.hwWritten.b) {
		return nil
	}
	if err := m.writeHWCheckpoint(b.Bytes()); err != nil {
		m.hwWritten.b = nil
		return err
	}
	m.hwWritten.b = b.Bytes()
	return nil
}

func (m *Manager) writeHWCheckpoint(b []byte) error {
	tmp := m.fs.PathJoin(m.dir, hwCheckpointFile+".tmp")
	f, err := m.fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := m.fs.Rename(tmp, m.fs.PathJoin(m.dir, hwCheckpointFile)); err != nil {
		return err
	}
	d, err := m.fs.OpenDir(filepath.Clean(m.dir))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
