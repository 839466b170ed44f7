package quorum

import "slices"

// Racks (broker.rack) are failure domains: a broker registers its rack
// (RegisterBrokerRecord), placement spreads a partition's replicas over
// racks (placement.go), and a consumer in a rack is sent to a replica in
// it (KIP-392, PreferredReadReplica). BrokerRack is the one lookup other
// packages use (the group assignors' rack-aware matching too).

// BrokerRack returns the rack broker id registered with, "" when it has
// none or is not registered.
func (im *Image) BrokerRack(id int32) string {
	if b := im.Brokers[id]; b != nil {
		return b.Rack
	}
	return ""
}

// PreferredReadReplica is Kafka's RackAwareReplicaSelector over the image
// (KIP-392): the replica of part a consumer in rack should fetch from.
// It is the leader when the consumer has no rack, when the leader is in
// that rack, or when no other in-sync replica of an alive broker is;
// otherwise the first such replica in the partition's replica order
// (Kafka picks the most caught-up one; every ISR member holds what is
// below the high watermark, which is what consumers read). The caller
// redirects the consumer only when the answer is not the leader.
func (im *Image) PreferredReadReplica(part *Partition, rack string) int32 {
	if rack == "" || part.Leader == NoLeader || im.BrokerRack(part.Leader) == rack {
		return part.Leader
	}
	for _, r := range part.Replicas {
		if r != part.Leader && slices.Contains(part.ISR, r) && im.Brokers[r].Alive() && im.BrokerRack(r) == rack {
			return r
		}
	}
	return part.Leader
}
