package quorum

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Unregistering a broker (Kafka's UnregisterBroker, KIP-500/KIP-631): the
// registration leaves the image, so Metadata and DescribeCluster no
// longer list the broker and placement never picks it. Kafka removes the
// broker from the ISRs it is in and leaves its replicas named (offline);
// Sluice refuses instead while any partition still names the broker as a
// replica (current, adding or removing): a decommission moves them off
// first (`sluice cluster decommission`), and an unregistered broker that
// still held the only copy of a partition would be a silent loss. A
// broker that starts again registers anew, as in Kafka.

// CmdUnregisterBroker names UnregisterBroker on the wire.
const CmdUnregisterBroker CommandType = "unregister_broker"

// TypeUnregisterBroker is the record that removes a registration.
const TypeUnregisterBroker RecordType = "unregister_broker"

// UnregisterBroker removes a broker's registration. It fails with
// BROKER_ID_NOT_REGISTERED for an unknown id, and with
// INVALID_REQUEST naming the partitions while any partition has a
// replica on the broker.
type UnregisterBroker struct {
	ID int32 `json:"id"`
}

// UnregisterBrokerRecord removes the registration of the broker with
// the given epoch.
type UnregisterBrokerRecord struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

func (*UnregisterBroker) CommandType() CommandType { return CmdUnregisterBroker }
func (*UnregisterBroker) newReply() any            { return nil }

func (*UnregisterBrokerRecord) Type() RecordType { return TypeUnregisterBroker }

func (r *UnregisterBrokerRecord) String() string {
	return fmt.Sprintf("unregister-broker id=%d epoch=%d", r.ID, r.Epoch)
}

// maxNamed bounds the partitions an error message names.
const maxNamed = 5

func (p *planner) unregisterBroker(c *UnregisterBroker) ([]Record, any, error) {
	b, err := p.broker(c.ID, AnyEpoch)
	if err != nil {
		return nil, nil, err
	}
	var hosted []string
	n := 0
	// Adding replicas are among the replicas: the replica index has them.
	p.im.sorted(p.im.idx.hosts[b.ID], func(t *Topic, i int32, part *Partition) {
		if slices.Contains(part.Replicas, b.ID) || slices.Contains(part.AddingReplicas, b.ID) {
			n++
			if len(hosted) < maxNamed {
				hosted = append(hosted, fmt.Sprintf("%s-%d", t.Name, i))
			}
		}
	})
	if n > 0 {
		return nil, nil, kerrf(kerr.InvalidRequest,
			"broker %d still hosts replicas of %d partitions (%v...): move them off first (sluice cluster decommission --broker-id %d)",
			b.ID, n, hosted, b.ID)
	}
	return []Record{&UnregisterBrokerRecord{ID: b.ID, Epoch: b.Epoch}}, nil, nil
}

func (im *Image) replayUnregisterBroker(r *UnregisterBrokerRecord) error {
	if _, err := im.brokerAt(r, r.ID, r.Epoch); err != nil {
		return err
	}
	delete(im.Brokers, r.ID)
	return nil
}
