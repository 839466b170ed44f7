package group

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fmtMeta shows a consumer protocol subscription as its topics, other
// bytes as text (scripts use short strings) or a length.
func fmtMeta(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return fmtMetaText(b)
}

// fmtSyncAssignment shows a SyncGroup's assignment: decoded when it is
// the consumer protocol's (a consumer group's classic member gets one).
func fmtSyncAssignment(b []byte) string {
	if len(b) >= 6 && b[0] == 0 && b[1] == 0 {
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(b); err == nil {
			var parts []string
			for _, t := range a.Topics {
				var ps []string
				for _, p := range t.Partitions {
					ps = append(ps, strconv.Itoa(int(p)))
				}
				parts = append(parts, t.Topic+"/"+strings.Join(ps, ","))
			}
			return "assign(" + strings.Join(parts, ";") + ")"
		}
	}
	return fmtMeta(b)
}

func fmtMetaText(b []byte) string {
	var m kmsg.ConsumerMemberMetadata
	if err := m.ReadFrom(b); err == nil && len(m.Topics) > 0 {
		return "sub(" + strings.Join(m.Topics, ";") + ")"
	}
	if len(b) <= 32 {
		return string(b)
	}
	return fmt.Sprintf("%dB", len(b))
}

func deref(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func (h *harness) fmtResponse(body kmsg.Response) string {
	var b strings.Builder
	switch r := body.(type) {
	case *kmsg.JoinGroupResponse:
		fmt.Fprintf(&b, "JoinGroup %s gen=%d member=%s leader=%s protocol=%s", errName(r.ErrorCode), r.Generation,
			short(r.MemberID), short(r.LeaderID), deref(r.Protocol))
		if r.SkipAssignment {
			b.WriteString(" skip-assignment")
		}
		if len(r.Members) > 0 {
			b.WriteString(" members=[")
			for i, m := range r.Members {
				if i > 0 {
					b.WriteString(" ")
				}
				fmt.Fprintf(&b, "%s:%s", short(m.MemberID), fmtMeta(m.ProtocolMetadata))
			}
			b.WriteString("]")
		}
	case *kmsg.SyncGroupResponse:
		fmt.Fprintf(&b, "SyncGroup %s", errName(r.ErrorCode))
		if r.ErrorCode == 0 {
			fmt.Fprintf(&b, " assignment=%s", fmtSyncAssignment(r.MemberAssignment))
		}
	case *kmsg.HeartbeatResponse:
		fmt.Fprintf(&b, "Heartbeat %s", errName(r.ErrorCode))
	case *kmsg.LeaveGroupResponse:
		fmt.Fprintf(&b, "LeaveGroup %s", errName(r.ErrorCode))
		for _, m := range r.Members {
			fmt.Fprintf(&b, " %s/%s:%s", short(m.MemberID), deref(m.InstanceID), errName(m.ErrorCode))
		}
	case *kmsg.TxnOffsetCommitResponse:
		b.WriteString("TxnOffsetCommit")
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				fmt.Fprintf(&b, " %s/%d:%s", t.Topic, p.Partition, errName(p.ErrorCode))
			}
		}
	case *kmsg.OffsetCommitResponse:
		b.WriteString("OffsetCommit")
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				fmt.Fprintf(&b, " %s/%d:%s", t.Topic, p.Partition, errName(p.ErrorCode))
			}
		}
	case *kmsg.OffsetFetchResponse:
		b.WriteString("OffsetFetch")
		if r.Version < 8 {
			fmt.Fprintf(&b, " %s", errName(r.ErrorCode))
			for _, t := range r.Topics {
				for _, p := range t.Partitions {
					fmt.Fprintf(&b, " %s/%d=%d(e%d,%q,%s)", t.Topic, p.Partition, p.Offset, p.LeaderEpoch, deref(p.Metadata), errName(p.ErrorCode))
				}
			}
		}
		for _, g := range r.Groups {
			fmt.Fprintf(&b, " [%s %s", g.Group, errName(g.ErrorCode))
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					fmt.Fprintf(&b, " %s/%d=%d(e%d,%q)", t.Topic, p.Partition, p.Offset, p.LeaderEpoch, deref(p.Metadata))
					if p.ErrorCode != 0 {
						fmt.Fprintf(&b, ":%s", errName(p.ErrorCode))
					}
				}
			}
			b.WriteString("]")
		}
	case *kmsg.OffsetDeleteResponse:
		fmt.Fprintf(&b, "OffsetDelete %s", errName(r.ErrorCode))
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				fmt.Fprintf(&b, " %s/%d:%s", t.Topic, p.Partition, errName(p.ErrorCode))
			}
		}
	case *kmsg.DeleteGroupsResponse:
		b.WriteString("DeleteGroups")
		for _, g := range r.Groups {
			fmt.Fprintf(&b, " %s:%s", g.Group, errName(g.ErrorCode))
		}
	case *kmsg.DescribeGroupsResponse:
		b.WriteString("DescribeGroups")
		for _, g := range r.Groups {
			fmt.Fprintf(&b, "\n    %s %s state=%s type=%q protocol=%q", g.Group, errName(g.ErrorCode), g.State, g.ProtocolType, g.Protocol)
			for _, m := range g.Members {
				fmt.Fprintf(&b, "\n      %s instance=%s client=%s host=%s meta=%s assignment=%s", short(m.MemberID),
					deref(m.InstanceID), m.ClientID, m.ClientHost, fmtMeta(m.ProtocolMetadata), fmtMeta(m.MemberAssignment))
			}
		}
	default:
		if s, ok := fmtConsumerResponse(body); ok {
			return s
		}
		fmt.Fprintf(&b, "%T", body)
	}
	return b.String()
}

func fmtRecord(r Record) string {
	s := NewShard(0, DefaultConfig())
	var b strings.Builder
	if len(r.Key) >= 2 && r.Key[1] >= 3 {
		return fmtConsumerRecord(r)
	}
	if len(r.Key) >= 2 && r.Key[1] == 2 {
		var k kmsg.GroupMetadataKey
		_ = k.ReadFrom(r.Key)
		fmt.Fprintf(&b, "group %s", k.Group)
		if r.Value == nil {
			return b.String() + " = tombstone"
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(r.Value); err != nil {
			return b.String() + " = " + err.Error()
		}
		fmt.Fprintf(&b, " = v%d type=%q gen=%d protocol=%s leader=%s state-time=%s", v.Version, v.ProtocolType,
			v.Generation, deref(v.Protocol), short(deref(v.Leader)), time.UnixMilli(v.CurrentStateTimestamp).Sub(t0))
		for _, m := range v.Members {
			fmt.Fprintf(&b, "\n      %s instance=%s session=%dms rebalance=%dms sub=%s assignment=%s", short(m.MemberID),
				deref(m.InstanceID), m.SessionTimeoutMillis, m.RebalanceTimeoutMillis, fmtMeta(m.Subscription), fmtMeta(m.Assignment))
		}
		return b.String()
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(r.Key); err != nil {
		return "bad key: " + err.Error()
	}
	fmt.Fprintf(&b, "offset %s %s/%d", k.Group, k.Topic, k.Partition)
	if r.Value == nil {
		return b.String() + " = tombstone"
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(r.Value); err != nil {
		return b.String() + " = " + err.Error()
	}
	_ = s
	fmt.Fprintf(&b, " = v%d %d epoch=%d meta=%q at=%s", v.Version, v.Offset, v.LeaderEpoch, v.Metadata, time.UnixMilli(v.CommitTimestamp).Sub(t0))
	return b.String()
}

// dump is the shard's state, for scripts and for the check that a tick
// before NextDue changes nothing.
func (h *harness) dump(s *Shard) string {
	var b strings.Builder
	if !s.loaded {
		b.WriteString("loading\n")
	}
	for _, id := range sortedKeys(s.groups) {
		g := s.groups[id]
		fmt.Fprintf(&b, "%s: %s gen=%d type=%q protocol=%q leader=%s since=%s", id, g.state, g.generation, g.protocolType,
			g.protocol, short(g.leader), h.since(g.stateTime))
		if g.state == statePreparing {
			fmt.Fprintf(&b, " join-deadline=%s", h.since(g.joinDeadline))
		}
		if len(g.pendingSync) > 0 {
			fmt.Fprintf(&b, " sync-deadline=%s pending-sync=%s", h.since(g.syncDeadline), strings.Join(shortAll(sortedKeys(g.pendingSync)), ","))
		}
		b.WriteString("\n")
		if g.consumer != nil {
			dumpConsumer(&b, g.consumer, h.since)
		}
		for _, pid := range sortedKeys(g.pending) {
			fmt.Fprintf(&b, "  pending %s until %s\n", short(pid), h.since(g.pending[pid]))
		}
		for _, m := range g.sortedMembers() {
			fmt.Fprintf(&b, "  %s", short(m.id))
			if m.instanceID != "" {
				fmt.Fprintf(&b, " instance=%s", m.instanceID)
			}
			fmt.Fprintf(&b, " session-until=%s", h.since(m.deadline))
			if m.join != nil {
				fmt.Fprintf(&b, " awaiting-join(r%d)", m.join.id)
			}
			if m.sync != nil {
				fmt.Fprintf(&b, " awaiting-sync(r%d)", m.sync.id)
			}
			if len(m.assignment) > 0 {
				fmt.Fprintf(&b, " assignment=%s", fmtMeta(m.assignment))
			}
			b.WriteString("\n")
		}
		for _, t := range sortedKeys(g.offsets) {
			for _, p := range sortedKeys(g.offsets[t]) {
				o := g.offsets[t][p]
				fmt.Fprintf(&b, "  offset %s/%d=%d epoch=%d meta=%q\n", t, p, o.offset, o.leaderEpoch, o.metadata)
			}
		}
	}
	return b.String()
}

func shortAll(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = short(id)
	}
	return out
}
