package node

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluice-log/sluice/node/kafka"
	"github.com/sluice-log/sluice/node/replica"
	"github.com/sluice-log/sluice/quorum"
)

// Dynamic broker configs and replication throttles. The dynamic keys
// live in the quorum (quorum/broker_configs.go) for the cluster default
// or one broker, and every broker applies its effective values on each
// reconcile (live, no restart): today the two replication throttle
// rates, which node/replica enforces (replica/throttle.go) for the
// replicas its topics' *.replication.throttled.replicas name.

// brokerDynamicConfig is one broker config key that can be altered live.
type brokerDynamicConfig struct {
	name, doc string
	check     func(string) error
}

// brokerDynamicConfigs are the broker keys IncrementalAlterConfigs may
// set, for the cluster default ("") or one broker.
var brokerDynamicConfigs = []brokerDynamicConfig{
	{quorum.ConfigFollowerThrottleRate, "bytes/s this broker fetches for its follower-throttled replicas outside the ISR (follower.replication.throttled.replicas)", intIn(0, math.MaxInt64)},
	{quorum.ConfigLeaderThrottleRate, "bytes/s this broker sends, as leader, to followers of its leader-throttled replicas outside the ISR (leader.replication.throttled.replicas)", intIn(0, math.MaxInt64)},
}

func dynamicBrokerConfig(name string) (brokerDynamicConfig, bool) {
	for _, c := range brokerDynamicConfigs {
		if c.name == name {
			return c, true
		}
	}
	return brokerDynamicConfig{}, false
}

// validateBrokerAlteration checks a BROKER resource's alteration: the
// name, dynamic keys only, their values.
func validateBrokerAlteration(r kafka.ConfigAlteration) (string, error) {
	if err := quorum.ValidBrokerResource(r.Name); err != nil {
		return err.Error(), kerr.InvalidRequest
	}
	for k, v := range r.Set {
		c, ok := dynamicBrokerConfig(k)
		if !ok {
			return fmt.Sprintf("broker config %s cannot be altered while the broker runs (dynamic: %s, %s): set it in server.properties and restart", k, quorum.ConfigLeaderThrottleRate, quorum.ConfigFollowerThrottleRate), kerr.InvalidRequest
		}
		if err := c.check(v); err != nil {
			return fmt.Sprintf("%s: %v", k, err), kerr.InvalidConfig
		}
	}
	for _, k := range r.Delete {
		if _, ok := dynamicBrokerConfig(k); !ok {
			return fmt.Sprintf("broker config %s is not a dynamic config", k), kerr.InvalidRequest
		}
	}
	return "", nil
}

// throttleRate is broker id's effective rate for key in im, Unthrottled
// when none is set.
func throttleRate(im *quorum.Image, id int32, key string) int64 {
	v, ok := im.BrokerConfig(id, key)
	if !ok {
		return replica.Unthrottled
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return replica.Unthrottled
	}
	return n
}

// checkThrottledReplicas validates a *.replication.throttled.replicas
// value: empty, "*", or partition:broker pairs separated by commas.
func checkThrottledReplicas(v string) error {
	v = strings.TrimSpace(v)
	if v == "" || v == "*" {
		return nil
	}
	for _, pair := range strings.Split(v, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(pair), ":")
		pn, perr := strconv.ParseInt(p, 10, 32)
		bn, berr := strconv.ParseInt(b, 10, 32)
		if !ok || perr != nil || berr != nil || pn < 0 || bn < 0 {
			return fmt.Errorf("%q is not \"*\" or a list of partition:broker (0:1,0:2,1:3)", v)
		}
	}
	return nil
}

// throttledHere says whether a throttled-replicas value names partition
// on broker self.
func throttledHere(v string, partition, self int32) bool {
	v = strings.TrimSpace(v)
	if v == "*" {
		return true
	}
	want := fmt.Sprintf("%d:%d", partition, self)
	for _, pair := range strings.Split(v, ",") {
		if strings.TrimSpace(pair) == want {
			return true
		}
	}
	return false
}

// applyThrottles gives the replica manager this broker's throttle rates
// from the image. Called by reconcile.
func (n *Node) applyThrottles(im *quorum.Image) {
	n.rm.SetThrottleRates(throttleRate(im, n.cfg.NodeID, quorum.ConfigLeaderThrottleRate), throttleRate(im, n.cfg.NodeID, quorum.ConfigFollowerThrottleRate))
}

// throttleOf is replica i of topic t's throttle on this broker.
func (n *Node) throttleOf(t *quorum.Topic, i int32) replica.Throttle {
	return replica.Throttle{
		Leader:   throttledHere(t.Configs[quorum.ConfigLeaderThrottledReplicas], i, n.cfg.NodeID),
		Follower: throttledHere(t.Configs[quorum.ConfigFollowerThrottledReplicas], i, n.cfg.NodeID),
		ISR:      slices.Clone(t.Partitions[i].ISR),
		Adding:   slices.Clone(t.Partitions[i].AddingReplicas),
	}
}
