package kafka

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/segment"
)

// fakeData is a FAKE node for the data APIs: a fakeAdmin plus one
// in-memory log per partition of "orders" (Logs), producer ids
// (ProducerIDs) and a fixed config table (Configs). It is what the fuzz
// target runs every API against.
type fakeData struct {
	*fakeAdmin
	dmu     sync.Mutex
	logs    map[int32][][]byte // batches by partition
	nextPID int64
	sig     chan struct{}
	// Transactions: the produces' transactional ids, the markers
	// written, the CompleteTxn calls ("partition/producer/commit").
	txnIDs    []string
	markers   []TxnMarker
	completed []string
	// features: nil until the first UpdateFeatures (then bootstrapped
	// at transaction.version 2).
	features *quorum.Image
}

func newFakeData(addr string) *fakeData {
	return &fakeData{fakeAdmin: &fakeAdmin{fakeBroker: newFakeBroker(addr)}, logs: map[int32][][]byte{}, sig: make(chan struct{})}
}

func (f *fakeData) known(topic string, p int32) bool { return topic == "orders" && (p == 0 || p == 1) }

func (f *fakeData) Produce(_ context.Context, p ProducePartition) ProduceResult {
	if !f.known(p.Topic, p.Partition) {
		return ProduceResult{Err: kerr.UnknownTopicOrPartition, BaseOffset: -1, LogStartOffset: -1}
	}
	_, records, err := segment.ValidateBatches(p.Records, 1<<20)
	if err != nil {
		return ProduceResult{Err: kerr.CorruptMessage, ErrMessage: err.Error(), BaseOffset: -1, LogStartOffset: -1}
	}
	f.dmu.Lock()
	defer f.dmu.Unlock()
	base := int64(len(f.logs[p.Partition]))
	// A copy: the server reuses p.Records' buffer once Produce returns.
	f.logs[p.Partition] = append(f.logs[p.Partition], bytes.Clone(p.Records))
	f.txnIDs = append(f.txnIDs, p.TransactionalID)
	close(f.sig)
	f.sig = make(chan struct{})
	return ProduceResult{BaseOffset: base, Records: records}
}

func (f *fakeData) Fetch(_ context.Context, p FetchPartition) FetchResult {
	if !f.known(p.Topic, p.Partition) {
		return FetchResult{Err: kerr.UnknownTopicOrPartition, HighWatermark: -1, LogStartOffset: -1}
	}
	f.dmu.Lock()
	defer f.dmu.Unlock()
	l := f.logs[p.Partition]
	if p.Offset < 0 || p.Offset > int64(len(l)) {
		return FetchResult{Err: kerr.OffsetOutOfRange, HighWatermark: -1, LogStartOffset: -1}
	}
	res := FetchResult{HighWatermark: int64(len(l)), LastStableOffset: int64(len(l))}
	if p.Offset < int64(len(l)) {
		res.Records = l[p.Offset]
		if p.ReadCommitted {
			// The FAKE says every batch's producer 7 aborted at 0.
			res.Aborted = []AbortedTxn{{ProducerID: 7, FirstOffset: 0}}
		}
	}
	return res
}

// WriteTxnMarker records the marker and acknowledges it at once; an
// unknown partition or a negative epoch is refused. __consumer_offsets
// partition 0 exists for markers.
func (f *fakeData) WriteTxnMarker(_ context.Context, m TxnMarker) ProduceResult {
	if !f.known(m.Topic, m.Partition) && (m.Topic != offsetsTopic || m.Partition != 0) {
		return ProduceResult{Err: kerr.UnknownTopicOrPartition, BaseOffset: -1, LogStartOffset: -1}
	}
	if m.ProducerEpoch < 0 {
		return ProduceResult{Err: kerr.InvalidProducerEpoch, BaseOffset: -1, LogStartOffset: -1}
	}
	f.dmu.Lock()
	defer f.dmu.Unlock()
	f.markers = append(f.markers, m)
	ch := make(chan error, 1)
	ch <- nil
	return ProduceResult{BaseOffset: int64(len(f.markers)), Pending: ch}
}

// DescribeProducers answers one FAKE producer with an open transaction.
func (f *fakeData) DescribeProducers(_ context.Context, topic string, p int32) ([]ProducerState, error) {
	if !f.known(topic, p) {
		return nil, kerr.UnknownTopicOrPartition
	}
	return []ProducerState{{ProducerID: 7, ProducerEpoch: 2, LastSequence: 9, LastTimestamp: 1000, CoordinatorEpoch: 3, CurrentTxnStartOffset: 4}}, nil
}

// CompleteTxn records the call.
func (f *fakeData) CompleteTxn(partition int32, producerID int64, commit bool) {
	f.dmu.Lock()
	defer f.dmu.Unlock()
	f.completed = append(f.completed, fmt.Sprintf("%d/%d/%v", partition, producerID, commit))
}

func (f *fakeData) Appended() <-chan struct{} {
	f.dmu.Lock()
	defer f.dmu.Unlock()
	return f.sig
}

func (f *fakeData) ListOffset(_ context.Context, p ListOffsetPartition) ListOffsetResult {
	if !f.known(p.Topic, p.Partition) {
		return ListOffsetResult{Err: kerr.UnknownTopicOrPartition}
	}
	f.dmu.Lock()
	defer f.dmu.Unlock()
	return ListOffsetResult{Offset: int64(len(f.logs[p.Partition])), Timestamp: -1, LeaderEpoch: 7}
}

func (f *fakeData) EndOffsetForEpoch(_ context.Context, p EpochPartition) EpochResult {
	if !f.known(p.Topic, p.Partition) {
		return EpochResult{Err: kerr.UnknownTopicOrPartition}
	}
	return EpochResult{LeaderEpoch: min(p.LeaderEpoch, 7), EndOffset: 0}
}

func (f *fakeData) InitProducerID(_ context.Context, id int64, epoch int16) (int64, int16, error) {
	f.dmu.Lock()
	defer f.dmu.Unlock()
	if id >= 0 {
		return id, epoch + 1, nil
	}
	f.nextPID++
	return f.nextPID, 0, nil
}

func (f *fakeData) DescribeConfigs(_ context.Context, rs []ConfigResource) ([]ConfigResult, error) {
	out := make([]ConfigResult, len(rs))
	for i, r := range rs {
		if r.Type != ConfigResourceTopic || r.Name != "orders" {
			out[i].Err = kerr.UnknownTopicOrPartition
			continue
		}
		out[i].Entries = []ConfigEntry{{Name: "retention.ms", Value: "1000", Source: ConfigSourceTopic, Type: 5, Doc: "doc"}}
	}
	return out, nil
}

func (f *fakeData) AlterConfigs(_ context.Context, rs []ConfigAlteration, _ bool) ([]ConfigResult, error) {
	out := make([]ConfigResult, len(rs))
	for i, r := range rs {
		if r.Type != ConfigResourceTopic {
			out[i].Err = kerr.InvalidRequest
		}
	}
	return out, nil
}

func (f *fakeData) ElectLeaders(_ context.Context, _ bool, parts []PartitionRef) ([]ElectionResult, error) {
	out := make([]ElectionResult, len(parts))
	for i, p := range parts {
		out[i] = ElectionResult{PartitionRef: p, Err: kerr.ElectionNotNeeded}
	}
	return out, nil
}

// DescribeQuorum answers a fixed FAKE quorum: voter 1 leads, voter 2 lags.
func (f *fakeData) DescribeQuorum(context.Context) (QuorumInfo, error) {
	return QuorumInfo{LeaderID: 1, LeaderEpoch: 3, HighWatermark: 10, Voters: []QuorumReplica{
		{ID: 1, LogEndOffset: 10, LastFetchMillis: 5, LastCaughtUpMillis: 5, Host: "127.0.0.1", Port: 9093},
		{ID: 2, LogEndOffset: 7, LastFetchMillis: 4, LastCaughtUpMillis: -1},
	}, Observers: []QuorumReplica{{ID: 4, LogEndOffset: -1, LastFetchMillis: -1, LastCaughtUpMillis: -1}}}, nil
}

// CreatePartitions grows "orders" (two partitions) in the FAKE only in
// what it answers: the count must grow.
func (f *fakeData) CreatePartitions(_ context.Context, ts []NewPartitions, _ bool) ([]PartitionsResult, error) {
	out := make([]PartitionsResult, len(ts))
	for i, t := range ts {
		switch {
		case t.Topic != "orders":
			out[i].Err = kerr.UnknownTopicOrPartition
		case t.Count <= 2:
			out[i].Err, out[i].ErrMessage = kerr.InvalidPartitions, "Topic already has 2 partitions."
		}
	}
	return out, nil
}

// The fake's feature levels: a quorum image changed by quorum.Plan and
// Replay, as the node does through Raft.
var _ Features = (*fakeData)(nil)

func (f *fakeData) FinalizedFeatures() (map[string]int16, int64) {
	f.dmu.Lock()
	defer f.dmu.Unlock()
	if f.features == nil {
		return map[string]int16{"transaction.version": 2}, 0
	}
	return maps.Clone(f.features.Features), f.features.FeaturesEpoch
}

func (f *fakeData) UpdateFeatures(_ context.Context, c *quorum.UpdateFeatures) (*quorum.UpdateFeaturesReply, error) {
	f.dmu.Lock()
	defer f.dmu.Unlock()
	if f.features == nil {
		f.features = quorum.NewImage()
		if err := f.features.Replay(&quorum.FeatureLevelRecord{Name: "transaction.version", Level: 2}); err != nil {
			return nil, err
		}
	}
	recs, reply, err := quorum.Plan(f.features, quorum.Policy{}, c)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if err := f.features.Replay(r); err != nil {
			return nil, err
		}
	}
	return reply.(*quorum.UpdateFeaturesReply), nil
}
