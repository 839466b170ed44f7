package admin

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Replication throttles of a reassignment, as kafka-reassign-partitions.sh
// sets and clears them:
//
//   - --execute --throttle N sets, on each moving topic,
//     leader.replication.throttled.replicas to the partition's current
//     replicas (partition:broker) and follower.replication.throttled.replicas
//     to the replicas it adds, merged with what the topic had; and
//     leader.replication.throttled.rate and follower.replication.throttled.rate
//     to N on every broker a moving partition has or gets.
//   - --verify, once every partition of the plan completed, removes the
//     two rates from every broker and the two lists from the plan's topics
//     ("Throttle was removed.").

const (
	leaderRate      = "leader.replication.throttled.rate"
	followerRate    = "follower.replication.throttled.rate"
	leaderReplicas  = "leader.replication.throttled.replicas"
	followerReplica = "follower.replication.throttled.replicas"
)

// ThrottledReplicas are the throttled-replica lists --throttle sets on
// each topic of a plan given the current assignment: by topic, the
// leader list (current replicas of moving partitions) and the follower
// list (the replicas a partition adds), partition:broker pairs sorted.
func ThrottledReplicas(cur, plan *Reassignment) (leader, follower map[string][]string) {
	leader, follower = map[string][]string{}, map[string][]string{}
	for _, p := range plan.Partitions {
		var now []int32
		for _, c := range cur.Partitions {
			if c.Topic == p.Topic && c.Partition == p.Partition {
				now = c.Replicas
			}
		}
		if slices.Equal(now, p.Replicas) {
			continue
		}
		for _, b := range now {
			leader[p.Topic] = append(leader[p.Topic], fmt.Sprintf("%d:%d", p.Partition, b))
		}
		for _, b := range p.Replicas {
			if !slices.Contains(now, b) {
				follower[p.Topic] = append(follower[p.Topic], fmt.Sprintf("%d:%d", p.Partition, b))
			}
		}
	}
	return leader, follower
}

// mergeList adds pairs to a topic's current list value ("*" stays "*").
func mergeList(current string, pairs []string) string {
	if strings.TrimSpace(current) == "*" {
		return "*"
	}
	var all []string
	for _, x := range strings.Split(current, ",") {
		if x = strings.TrimSpace(x); x != "" {
			all = append(all, x)
		}
	}
	for _, p := range pairs {
		if !slices.Contains(all, p) {
			all = append(all, p)
		}
	}
	slices.Sort(all)
	return strings.Join(all, ",")
}

// setThrottles applies --throttle for plan (cur: the assignment before).
func (c *reassignCmd) setThrottles(s session, w io.Writer, cur, plan *Reassignment) error {
	leader, follower := ThrottledReplicas(cur, plan)
	topics := c.topicsOf(plan)
	rcs, err := s.adm.DescribeTopicConfigs(s.ctx, topics...)
	if err != nil {
		return c.unreachable(err)
	}
	have := map[string]map[string]string{}
	for _, rc := range rcs {
		have[rc.Name] = map[string]string{}
		for _, e := range rc.Configs {
			if e.Value != nil {
				have[rc.Name][e.Key] = *e.Value
			}
		}
	}
	var brokers []int32
	for _, ps := range []*Reassignment{cur, plan} {
		for _, p := range ps.Partitions {
			for _, b := range p.Replicas {
				if !slices.Contains(brokers, b) {
					brokers = append(brokers, b)
				}
			}
		}
	}
	slices.Sort(brokers)
	for _, t := range topics {
		var changes []kadm.AlterConfig
		if len(leader[t]) > 0 {
			v := mergeList(have[t][leaderReplicas], leader[t])
			changes = append(changes, kadm.AlterConfig{Op: kadm.SetConfig, Name: leaderReplicas, Value: &v})
		}
		if len(follower[t]) > 0 {
			v := mergeList(have[t][followerReplica], follower[t])
			changes = append(changes, kadm.AlterConfig{Op: kadm.SetConfig, Name: followerReplica, Value: &v})
		}
		if len(changes) == 0 {
			continue
		}
		if err := alterOK(s.adm.AlterTopicConfigs(s.ctx, changes, t)); err != nil {
			return fmt.Errorf("setting the throttled replicas of %s: %w", t, err)
		}
	}
	rate := strconv.FormatInt(c.throttle, 10)
	changes := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: leaderRate, Value: &rate}, {Op: kadm.SetConfig, Name: followerRate, Value: &rate}}
	if err := alterOK(s.adm.AlterBrokerConfigs(s.ctx, changes, brokers...)); err != nil {
		return fmt.Errorf("setting the replication throttle on brokers %v: %w", brokers, err)
	}
	if c.format == "text" {
		fmt.Fprintf(w, "The inter-broker throttle limit was set to %d B/s on brokers %v\n", c.throttle, brokers)
	}
	return nil
}

// clearThrottles removes the throttle rates from every broker and the
// throttled-replica lists from the plan's topics (--verify, once done).
func (c *reassignCmd) clearThrottles(s session, w io.Writer, plan *Reassignment) error {
	md, err := s.adm.Metadata(s.ctx)
	if err != nil {
		return c.unreachable(err)
	}
	del := []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: leaderRate}, {Op: kadm.DeleteConfig, Name: followerRate}}
	if err := alterOK(s.adm.AlterBrokerConfigs(s.ctx, del, md.Brokers.NodeIDs()...)); err != nil {
		return fmt.Errorf("removing the replication throttle from the brokers: %w", err)
	}
	del = []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: leaderReplicas}, {Op: kadm.DeleteConfig, Name: followerReplica}}
	if err := alterOK(s.adm.AlterTopicConfigs(s.ctx, del, c.topicsOf(plan)...)); err != nil {
		return fmt.Errorf("removing the throttled replicas: %w", err)
	}
	if c.format == "text" {
		fmt.Fprintln(w, "Throttle was removed.")
	}
	return nil
}

// alterOK is the first error of an alter call and its answers.
func alterOK(resp kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range resp {
		if r.Err != nil {
			return fmt.Errorf("%s: %v%s", r.Name, r.Err, detail(r.ErrMessage))
		}
	}
	return nil
}
