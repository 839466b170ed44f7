package quorum

import (
	"fmt"
	"slices"
	"strings"
)

// LeaderImbalance is one broker's share of the partitions it is the
// preferred leader of (the first replica) that another replica leads.
type LeaderImbalance struct {
	Broker int32
	// Preferred counts the partitions whose first replica is Broker;
	// Elsewhere those of them that Broker does not lead.
	Preferred, Elsewhere int
	// Movable are the partitions of Elsewhere whose leadership can go
	// back to Broker now: it is alive and in their ISR. Sorted.
	Movable []TopicPartition
}

// Percent is Elsewhere as a percentage of Preferred.
func (li LeaderImbalance) Percent() float64 {
	if li.Preferred == 0 {
		return 0
	}
	return 100 * float64(li.Elsewhere) / float64(li.Preferred)
}

func (li LeaderImbalance) String() string {
	var tps []string
	for _, tp := range li.Movable {
		tps = append(tps, fmt.Sprintf("%s/%d", tp.Topic, tp.Partition))
	}
	return fmt.Sprintf("broker %d: %d of %d preferred elsewhere (%.0f%%) movable=[%s]",
		li.Broker, li.Elsewhere, li.Preferred, li.Percent(), strings.Join(tps, " "))
}

// LeaderImbalances returns, for every broker that is the preferred leader
// of some partition, how many of those partitions it does not lead, by
// broker id. Pure: it reads im only.
func LeaderImbalances(im *Image) []LeaderImbalance {
	by := map[int32]*LeaderImbalance{}
	for _, name := range im.SortedTopics() {
		t := im.Topics[name]
		for i, p := range t.Partitions {
			if len(p.Replicas) == 0 {
				continue
			}
			pref := p.Replicas[0]
			li := by[pref]
			if li == nil {
				li = &LeaderImbalance{Broker: pref}
				by[pref] = li
			}
			li.Preferred++
			if p.Leader == pref {
				continue
			}
			li.Elsewhere++
			if im.Brokers[pref].Alive() && slices.Contains(p.ISR, pref) {
				li.Movable = append(li.Movable, TopicPartition{Topic: name, Partition: int32(i)})
			}
		}
	}
	out := make([]LeaderImbalance, 0, len(by))
	for _, li := range by {
		out = append(out, *li)
	}
	slices.SortFunc(out, func(a, b LeaderImbalance) int { return int(a.Broker) - int(b.Broker) })
	return out
}

// PlanLeaderRebalance is the active controller's periodic check
// (auto.leader.rebalance.enable, every
// leader.imbalance.check.interval.seconds), with Kafka's semantics: a
// broker whose imbalance (LeaderImbalance.Percent) exceeds
// imbalancePercent (leader.imbalance.per.broker.percentage) gets back the
// leadership of every partition it prefers, is alive for and in the ISR
// of. It returns the preferred election that does it, or nil when no
// broker is over the threshold or none of its partitions can move. Pure.
func PlanLeaderRebalance(im *Image, imbalancePercent int) *ElectLeaders {
	var tps []TopicPartition
	for _, li := range LeaderImbalances(im) {
		if li.Percent() > float64(imbalancePercent) {
			tps = append(tps, li.Movable...)
		}
	}
	if len(tps) == 0 {
		return nil
	}
	return &ElectLeaders{Election: ElectPreferred, Partitions: tps}
}
