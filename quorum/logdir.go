package quorum

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// CmdLogDirOffline names LogDirOffline on the wire.
const CmdLogDirOffline CommandType = "log_dir_offline"

// TypeLogDirOffline is the record of LogDirOffline; part of the on-disk
// format.
const TypeLogDirOffline RecordType = "log_dir_offline"

// LogDirOffline reports that a log directory of a broker failed (an I/O
// error such as ENOSPC): the broker's replicas in it cannot serve, so the
// controller takes them out of every ISR (keeping one as the last member,
// as a fence does) and moves their leaderships to in-sync replicas. The
// broker stays registered and unfenced (it still answers metadata), but
// cannot lead or join an ISR until it registers again, after a restart;
// Kafka's brokers report failed directories in their heartbeat likewise.
//
// A Sluice node has one log directory, so an offline directory takes all
// of the broker's replicas. Epoch is the registration the report comes
// from: a report from an earlier incarnation is refused
// (STALE_BROKER_EPOCH). A repeated report changes nothing.
type LogDirOffline struct {
	ID    int32  `json:"id"`
	Epoch int64  `json:"epoch"`
	Dir   string `json:"dir"`
}

func (*LogDirOffline) CommandType() CommandType { return CmdLogDirOffline }
func (*LogDirOffline) newReply() any            { return nil }

// LogDirOfflineRecord marks a log directory of the broker registration
// with the given epoch offline.
type LogDirOfflineRecord struct {
	ID    int32  `json:"id"`
	Epoch int64  `json:"epoch"`
	Dir   string `json:"dir"`
}

func (*LogDirOfflineRecord) Type() RecordType { return TypeLogDirOffline }

func (r *LogDirOfflineRecord) String() string {
	return fmt.Sprintf("log-dir-offline id=%d epoch=%d dir=%s", r.ID, r.Epoch, r.Dir)
}

func (p *planner) logDirOffline(c *LogDirOffline) ([]Record, any, error) {
	if c.Dir == "" {
		return nil, nil, kerrf(kerr.InvalidRequest, "broker %d: no log dir named", c.ID)
	}
	b, err := p.broker(c.ID, c.Epoch)
	if err != nil || slices.Contains(b.OfflineLogDirs, c.Dir) {
		return nil, nil, err
	}
	recs := []Record{&LogDirOfflineRecord{ID: b.ID, Epoch: b.Epoch, Dir: c.Dir}}
	return append(recs, p.moveOff(b.ID, false)...), nil, nil
}

// replayLogDirOffline applies a LogDirOfflineRecord (called by Replay).
func (im *Image) replayLogDirOffline(r *LogDirOfflineRecord) error {
	b, err := im.brokerAt(r, r.ID, r.Epoch)
	if err != nil {
		return err
	}
	if !slices.Contains(b.OfflineLogDirs, r.Dir) {
		b.OfflineLogDirs = append(b.OfflineLogDirs, r.Dir)
	}
	return nil
}
