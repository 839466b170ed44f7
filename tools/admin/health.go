package admin

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-log/sluice/tools/internal/cli"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Health is `sluice cluster health`, after `rpk cluster health`.
type Health struct {
	Healthy         bool     `json:"healthy"`
	Reasons         []string `json:"unhealthy_reasons,omitempty"`
	Controller      int32    `json:"controller_id"`
	Brokers         []int32  `json:"all_nodes"`
	NodesDown       []int32  `json:"nodes_down"`
	Leaderless      []string `json:"leaderless_partitions"`
	UnderReplicated []string `json:"under_replicated_partitions"`
	UnderMinISR     []string `json:"under_min_isr_partitions"`
	// NotServing are partitions whose leader, asked directly for the
	// partition's end offset with the leader epoch the metadata gives,
	// answers an error: it cannot serve (its log failed, or it is fenced)
	// while the metadata still names it leader. "topic/partition: ERROR".
	NotServing []string `json:"not_serving_partitions"`
	// OfflineLogDirs are live brokers whose replicas the metadata lists
	// as offline (Metadata offline_replicas): their log directory failed
	// (a full disk, an I/O error; the node's /readyz and
	// kafka_log_logmanager_offlinelogdirectorycount say which) or, for a
	// moment, they are in controlled shutdown. A restart once the disk is
	// fixed brings them back.
	OfflineLogDirs []int32 `json:"nodes_with_offline_log_dirs"`
	// UncleanElections counts, per topic, the unclean leader elections
	// the metadata records (history: each may have lost acknowledged
	// records). They are shown, not judged: a cluster that recovered
	// from one is healthy again.
	UncleanElections      map[string]int `json:"unclean_elections"`
	UncleanElectionsTotal int            `json:"unclean_elections_total"`
}

// healthCmd is `sluice cluster health`.
type healthCmd struct{ common }

// NewHealthCommand returns `sluice cluster health`.
func NewHealthCommand() *cobra.Command {
	var c healthCmd
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Is the cluster healthy, and if not, why (exit 2 when not)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	c.register(cmd)
	return cmd
}

func (c *healthCmd) run(ctx context.Context, w io.Writer) error {
	return c.with(ctx, func(s session) error {
		md, err := s.adm.Metadata(s.ctx)
		if err != nil {
			return c.unreachable(err)
		}
		minISR, unclean := topicHealthConfigs(s.ctx, s.cl, md.Topics.Names())
		h := health(md, minISR)
		h.judgeServing(probeLeaders(s.ctx, s.cl, md))
		h.UncleanElections = unclean
		for _, n := range unclean {
			h.UncleanElectionsTotal += n
		}
		err = c.emit(w, h, func() { printHealth(w, h) })
		if err == nil && !h.Healthy {
			return cli.ErrProblem
		}
		return err
	})
}

func printHealth(w io.Writer, h Health) {
	fmt.Fprintf(w, "CLUSTER HEALTH OVERVIEW\n=======================\n")
	for _, l := range []struct {
		label string
		value any
	}{
		{"Healthy", h.Healthy},
		{"Unhealthy reasons", h.Reasons},
		{"Controller ID", h.Controller},
		{"All nodes", h.Brokers},
		{"Nodes down", h.NodesDown},
		{"Nodes with offline log dirs", h.OfflineLogDirs},
		{"Leaderless partitions", h.Leaderless},
		{"Under-replicated partitions", h.UnderReplicated},
		{"Under-min-ISR partitions", h.UnderMinISR},
		{"Not-serving partitions", h.NotServing},
		{"Unclean elections seen", fmt.Sprintf("%d%s", h.UncleanElectionsTotal, uncleanDetail(h.UncleanElections))},
	} {
		fmt.Fprintf(w, "%-29s%v\n", l.label+":", l.value)
	}
}

// uncleanElectionsKey is the read-only topic entry in which Sluice
// reports the unclean leader elections of a topic (node.UncleanElectionsKey);
// it is answered only when asked for by name, and other Kafka brokers do
// not know it.
const uncleanElectionsKey = "sluice.unclean.leader.elections"

// topicHealthConfigs reads each topic's min.insync.replicas (1, Kafka's
// default, when unknown) and its unclean election count (topics with none
// are left out) in one DescribeConfigs request.
func topicHealthConfigs(ctx context.Context, cl kmsg.Requestor, topics []string) (map[string]int, map[string]int) {
	minISR, unclean := map[string]int{}, map[string]int{}
	if len(topics) == 0 {
		return minISR, unclean
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, t := range topics {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, t
		r.ConfigNames = []string{"min.insync.replicas", uncleanElectionsKey}
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return minISR, unclean
	}
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 {
			continue
		}
		for _, e := range r.Configs {
			if e.Value == nil {
				continue
			}
			n, err := strconv.Atoi(*e.Value)
			switch {
			case err != nil:
			case e.Name == "min.insync.replicas":
				minISR[r.ResourceName] = n
			case e.Name == uncleanElectionsKey && n > 0:
				unclean[r.ResourceName] = n
			}
		}
	}
	return minISR, unclean
}

// uncleanDetail lists topics with unclean elections, for the text output.
func uncleanDetail(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s: %d", n, m[n])
	}
	return " (" + strings.Join(parts, ", ") + "; acknowledged records may have been lost)"
}

// health judges a metadata snapshot. Brokers the controller fenced are not
// in the metadata, so a node is down when it is some partition's replica
// but not a live broker.
func health(md kadm.Metadata, minISR map[string]int) Health {
	h := Health{Controller: md.Controller}
	live := map[int32]bool{}
	for _, b := range md.Brokers {
		live[b.NodeID] = true
		h.Brokers = append(h.Brokers, b.NodeID)
	}
	down, offline := map[int32]bool{}, map[int32]bool{}
	for _, name := range md.Topics.Names() {
		for _, p := range md.Topics[name].Partitions.Sorted() {
			id := fmt.Sprintf("%s/%d", name, p.Partition)
			for _, r := range p.Replicas {
				if !live[r] {
					down[r] = true
				}
			}
			for _, r := range p.OfflineReplicas {
				if live[r] {
					offline[r] = true
				}
			}
			if p.Leader < 0 || !live[p.Leader] {
				h.Leaderless = append(h.Leaderless, id)
			}
			if len(p.ISR) < len(p.Replicas) {
				h.UnderReplicated = append(h.UnderReplicated, id)
			}
			if m, ok := minISR[name]; ok && len(p.ISR) < m {
				h.UnderMinISR = append(h.UnderMinISR, id)
			}
		}
	}
	for id := range down {
		h.NodesDown = append(h.NodesDown, id)
	}
	slices.Sort(h.Brokers)
	slices.Sort(h.NodesDown)
	for id := range offline {
		h.OfflineLogDirs = append(h.OfflineLogDirs, id)
	}
	slices.Sort(h.OfflineLogDirs)
	if h.Controller < 0 {
		h.Reasons = append(h.Reasons, "no_elected_controller")
	}
	if len(h.NodesDown) > 0 {
		h.Reasons = append(h.Reasons, "nodes_down")
	}
	if len(h.OfflineLogDirs) > 0 {
		h.Reasons = append(h.Reasons, "offline_log_dirs")
	}
	if len(h.Leaderless) > 0 {
		h.Reasons = append(h.Reasons, "leaderless_partitions")
	}
	if len(h.UnderReplicated) > 0 {
		h.Reasons = append(h.Reasons, "under_replicated_partitions")
	}
	if len(h.UnderMinISR) > 0 {
		h.Reasons = append(h.Reasons, "under_min_isr_partitions")
	}
	h.Healthy = len(h.Reasons) == 0
	return h
}

// probeLeaders asks each live leader, in one ListOffsets per broker (no
// retries), for the end offset of the partitions the metadata says it
// leads, with their leader epochs, and returns those answered with an
// error as "topic/partition: ERROR", sorted, except the answers of a
// leader that has not applied the same metadata yet. A broker that cannot be
// reached is left out: nodes_down covers it.
func probeLeaders(ctx context.Context, cl *kgo.Client, md kadm.Metadata) []string {
	live := map[int32]bool{}
	for _, b := range md.Brokers {
		live[b.NodeID] = true
	}
	reqs := map[int32]*kmsg.ListOffsetsRequest{}
	for _, name := range md.Topics.Names() {
		for _, p := range md.Topics[name].Partitions.Sorted() {
			if p.Leader < 0 || !live[p.Leader] {
				continue
			}
			req := reqs[p.Leader]
			if req == nil {
				req = kmsg.NewPtrListOffsetsRequest()
				req.ReplicaID = -1
				reqs[p.Leader] = req
			}
			if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != name {
				t := kmsg.NewListOffsetsRequestTopic()
				t.Topic = name
				req.Topics = append(req.Topics, t)
			}
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = p.Partition, p.LeaderEpoch, -1
			t := &req.Topics[len(req.Topics)-1]
			t.Partitions = append(t.Partitions, rp)
		}
	}
	var out []string
	for leader, req := range reqs {
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err != nil {
			continue
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				switch err := kerr.ErrorForCode(p.ErrorCode); err {
				case nil, kerr.FencedLeaderEpoch, kerr.UnknownLeaderEpoch, kerr.UnknownTopicOrPartition:
					// Our metadata and the leader's differ (a
					// leader change or a new topic in flight), not
					// a leader stuck.
				default:
					out = append(out, fmt.Sprintf("%s/%d: %s", t.Topic, p.Partition, errName(err)))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// errName is a Kafka error's name (NOT_LEADER_OR_FOLLOWER), or its text.
func errName(err error) string {
	if ke, ok := err.(*kerr.Error); ok {
		return ke.Message
	}
	return err.Error()
}

// judgeServing adds what probeLeaders found to h.
func (h *Health) judgeServing(notServing []string) {
	h.NotServing = notServing
	if len(notServing) > 0 {
		h.Reasons = append(h.Reasons, "leaders_not_serving")
		h.Healthy = false
	}
}

// infoCmd is `sluice cluster info`: the cluster id, controller and
// brokers.
type infoCmd struct{ common }

// NewInfoCommand returns `sluice cluster info`.
func NewInfoCommand() *cobra.Command {
	var c infoCmd
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Cluster id, controller and brokers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	c.register(cmd)
	return cmd
}

// infoBroker is one broker of `sluice cluster info --format json`.
type infoBroker struct {
	ID   int32   `json:"id"`
	Host string  `json:"host"`
	Port int32   `json:"port"`
	Rack *string `json:"rack,omitempty"`
}

func (c *infoCmd) run(ctx context.Context, w io.Writer) error {
	return c.with(ctx, func(s session) error {
		md, err := s.adm.BrokerMetadata(s.ctx)
		if err != nil {
			return c.unreachable(err)
		}
		info := struct {
			ClusterID  string       `json:"cluster_id"`
			Controller int32        `json:"controller_id"`
			Brokers    []infoBroker `json:"brokers"`
		}{ClusterID: md.Cluster, Controller: md.Controller}
		for _, b := range md.Brokers {
			info.Brokers = append(info.Brokers, infoBroker{b.NodeID, b.Host, b.Port, b.Rack})
		}
		return c.emit(w, info, func() {
			fmt.Fprintf(w, "CLUSTER\n=======\n%s\n\nBROKERS\n=======\nID    HOST            PORT\n", md.Cluster)
			for _, b := range info.Brokers {
				star := ""
				if b.ID == md.Controller {
					star = "*"
				}
				fmt.Fprintf(w, "%-5s %-15s %d\n", fmt.Sprint(b.ID)+star, b.Host, b.Port)
			}
		})
	})
}
