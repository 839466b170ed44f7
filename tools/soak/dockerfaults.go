package soak

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Fault kinds only the docker backend injects (the others it shares with
// the process backend: kill-leader, kill-controller, pause and
// net-partition, each done the way it happens between hosts).
const (
	// FaultStopLeader: docker stop (SIGTERM, a clean shutdown) of a
	// partition's leader, started again after the hold.
	FaultStopLeader = "stop-leader"
	// FaultDisconnect: the leader's container disconnected from the
	// network (docker network disconnect), reconnected at its address.
	FaultDisconnect = "net-disconnect"
	// FaultLoss: a share of the packets between the leader and the other
	// nodes dropped (iptables statistic inside its network namespace).
	FaultLoss = "packet-loss"
	// FaultHostLoss: a broker-only host lost with its disk: its container
	// and volume removed, a new broker with a new id and an empty volume
	// at its address, the partitions reassigned to it.
	FaultHostLoss = "host-loss"
)

// DockerFaults is the default of --faults with --docker. Power loss is the
// process backend's (powerfs under the node process): not here.
var DockerFaults = []string{FaultKillLeader, FaultKillController, FaultStopLeader, FaultPause, FaultDisconnect, FaultPartition, FaultLoss, FaultHostLoss}

// dockerLossProbability is the share of packets packet-loss drops, each way.
const (
	dockerLossProbability = "0.05"
	dockerLossShare       = "5%"
)

// Shapes of a docker net-partition (iptables in the leader's namespace,
// against its followers' addresses), picked from the step's hold so that
// the seed's draws stay those of the process backend.
const (
	cutBoth = iota // nothing either way
	cutIn          // the leader receives nothing from them (it still sends)
	cutOut         // the leader sends nothing to them (it still receives)
)

var cutNames = []string{"both ways", "inbound only: the leader hears nothing from", "outbound only: the leader reaches none of"}

// injectDocker runs one fault of the docker backend to its heal.
func (f *faulter) injectDocker(ctx context.Context, st step, hold time.Duration) Fault {
	d := f.hosts
	kind, tp := st.Kind, f.tps[st.Partition]
	fl := Fault{Kind: kind, Start: time.Now()}
	skip := func(why string) Fault { fl.Skipped, fl.Healed = why, time.Now(); return fl }
	var err error
	var leader int32 = -1
	var replicas []int32
	var epoch int32
	if kind != FaultKillController && kind != FaultHostLoss {
		p, perr := f.partition(ctx, tp)
		if perr != nil || p.Leader < 0 {
			if _, _, lerr := f.leader(ctx, tp); lerr != nil {
				return skip(lerr.Error())
			}
			if p, perr = f.partition(ctx, tp); perr != nil || p.Leader < 0 {
				return skip(fmt.Sprintf("%s: no leader in the metadata (%v)", tp, perr))
			}
		}
		leader, replicas, epoch = p.Leader, p.Replicas, p.LeaderEpoch
		fl.Nodes = []int32{leader}
		fl.Target = fmt.Sprintf("node %d (leader of %s)", leader, tp)
	}
	n, ok := d.node(leader)
	if leader >= 0 && !ok {
		return skip(fmt.Sprintf("node %d (leader of %s) is no container of the project", leader, tp))
	}
	var others []*dockerNode
	for _, r := range replicas {
		if o, ok := d.node(r); ok && r != leader {
			others = append(others, o)
		}
	}
	switch kind {
	case FaultKillLeader, FaultStopLeader:
		verb := map[string][]string{FaultKillLeader: {"kill", "--signal", "KILL"}, FaultStopLeader: {"stop", "--time", "40"}}[kind]
		var seen <-chan failover
		if kind == FaultStopLeader {
			fl.Start = time.Now() // SIGTERM: the fault is the shutdown
		}
		err = d.downUp(ctx, n, verb, hold, func() {
			if kind == FaultKillLeader {
				fl.Start = time.Now() // the process is gone
			}
			seen = f.watch(ctx, fl.Start, f.newLeader(tp, epoch))
		})
		if seen != nil {
			provedFailover(&fl, "leader of "+tp.String(), <-seen)
		}
	case FaultKillController:
		controller, term, qerr := f.quorumLeader(ctx)
		if qerr != nil {
			return skip("describe quorum: " + qerr.Error())
		}
		if n, ok = d.node(controller); !ok {
			return skip(fmt.Sprintf("no container for the active controller %d", controller))
		}
		fl.Target, fl.Nodes = fmt.Sprintf("node %d (active controller)", controller), []int32{controller}
		var seen <-chan failover
		err = d.downUp(ctx, n, []string{"kill", "--signal", "KILL"}, hold, func() {
			fl.Start = time.Now()
			seen = f.watch(ctx, fl.Start, f.newController(term))
		})
		if seen != nil {
			provedFailover(&fl, "active controller", <-seen)
		}
	case FaultPause:
		err = d.pause(ctx, &fl, n, hold)
	case FaultDisconnect:
		// A failover seen while the leader is off the network; a cut too
		// short for the session timeout has none, and needs none.
		wctx, cancel := context.WithCancel(ctx)
		var seen <-chan failover
		err = d.disconnect(ctx, &fl, n, hold, func() {
			fl.Start = time.Now() // off the network
			seen = f.watch(wctx, fl.Start, f.newLeader(tp, epoch))
		})
		cancel()
		if seen == nil {
			break
		}
		if r := <-seen; r.err == nil && fl.NoEffect == "" {
			id := r.id
			fl.NewLeader, fl.Failover = &id, r.took
			fl.Effect += fmt.Sprintf("; new leader of %s node %d after %v", tp, id, r.took.Round(10*time.Millisecond))
		}
	case FaultPartition, FaultLoss:
		if len(others) == 0 {
			return skip(fmt.Sprintf("%s has no followers", tp))
		}
		var ips []string
		var ids []int32
		for _, o := range others {
			ips, ids = append(ips, o.ip), append(ids, o.id)
		}
		shape, prob := int(hold/time.Millisecond)%3, ""
		if kind == FaultLoss {
			shape, prob = cutBoth, dockerLossProbability
			fl.Target += fmt.Sprintf(": %s of its packets to and from %v dropped at random", dockerLossShare, ids)
		} else {
			fl.Target += fmt.Sprintf(" cut off from its followers %v, %s", ids, cutNames[shape])
		}
		var dropped int64
		dropped, err = d.cut(ctx, n, ips, shape, prob, hold, func() { fl.Start = time.Now() })
		fl.PacketsDropped = dropped
		if dropped > 0 {
			fl.Effect = fmt.Sprintf("%d packets dropped in node %d's namespace", dropped, n.id)
		} else {
			fl.NoEffect = "its rules dropped no packet"
		}
	case FaultHostLoss:
		why, herr := f.hostLoss(ctx, &fl, st, hold)
		if why != "" {
			return skip(why)
		}
		err = herr
	default:
		return skip(fmt.Sprintf("%s is no fault of the docker backend (%s)", kind, strings.Join(DockerFaults, ",")))
	}
	fl.Healed = time.Now()
	if err != nil {
		fl.Target += " (error: " + err.Error() + ")"
	}
	return fl
}

// downUp takes n's container down with `docker verb...` (kill or stop),
// runs down once it is, waits hold and starts it again. A fault's Start
// is when it took effect (after docker kill returned), so that the time to
// writable after it does not count the docker CLI's own latency.
func (d *dockerHosts) downUp(ctx context.Context, n *dockerNode, verb []string, hold time.Duration, down func()) error {
	kctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	_, err := command(kctx, "docker", append(verb, n.container)...)
	cancel()
	if down != nil {
		down()
	}
	wait(ctx, hold)
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return errors.Join(err, d.start(sctx, n))
}

// pause freezes the container (docker pause: the cgroup freezer) for
// hold. Its effect is how long docker showed it paused.
func (d *dockerHosts) pause(ctx context.Context, fl *Fault, n *dockerNode, hold time.Duration) error {
	_, err := command(ctx, "docker", "pause", n.container)
	var at time.Time
	if err == nil {
		if is, ierr := dockerInspect(ctx, n.container); ierr == nil && is.State.Paused {
			at = time.Now()
			fl.Start = at // frozen: the fault took effect
		}
		wait(ctx, hold)
	}
	uctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, uerr := command(uctx, "docker", "unpause", n.container)
	if at.IsZero() {
		fl.NoEffect = "the container was not seen paused"
	} else {
		fl.Stopped = time.Since(at)
		fl.Effect = fmt.Sprintf("paused (frozen) for %v", fl.Stopped.Round(10*time.Millisecond))
	}
	return errors.Join(err, uerr)
}

// disconnect takes n's container off the network for hold, then connects
// it again at its address. Its effect: the host could reach the node's
// Kafka port before and could not during the cut.
func (d *dockerHosts) disconnect(ctx context.Context, fl *Fault, n *dockerNode, hold time.Duration, cut func()) error {
	before := dialable(n.ip)
	_, err := command(ctx, "docker", "network", "disconnect", "--force", d.network, n.container)
	if err == nil {
		cut()
		derr := dialable(n.ip)
		switch {
		case derr == nil:
			fl.NoEffect = fmt.Sprintf("%s:9092 still answered after the disconnect", n.ip)
		case before != nil:
			fl.NoEffect = fmt.Sprintf("%s:9092 did not answer before the disconnect either (%v)", n.ip, before)
		default:
			fl.Effect = fmt.Sprintf("off the network: %s:9092 answered before, not during (%v)", n.ip, shortErr(derr))
		}
		wait(ctx, hold)
	} else {
		fl.NoEffect = "not disconnected"
	}
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, cerr := command(cctx, "docker", "network", "connect", "--ip", n.ip, "--alias", n.service, d.network, n.container)
	return errors.Join(err, cerr)
}

func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// nsIptables runs iptables inside the network namespace of n's node
// process (the image has no iptables: the host's binary, the container's
// namespace).
func nsIptables(ctx context.Context, n *dockerNode, args ...string) (string, error) {
	return command(ctx, "nsenter", append([]string{"-t", strconv.Itoa(n.pid), "-n", "iptables"}, args...)...)
}

const nsChain = "SLUICE-SOAK"

// cut drops, inside n's namespace, what n exchanges with peers (shape:
// both ways, inbound or outbound only; prob "" drops all, else that
// share at random) for hold, then removes the rules and returns the
// packets they dropped.
func (d *dockerHosts) cut(ctx context.Context, n *dockerNode, peers []string, shape int, prob string, hold time.Duration, cut func()) (int64, error) {
	if _, err := nsIptables(ctx, n, "-N", nsChain); err != nil {
		return 0, err
	}
	var errs []error
	add := func(args ...string) {
		if prob != "" {
			args = append(args, "-m", "statistic", "--mode", "random", "--probability", prob)
		}
		_, err := nsIptables(ctx, n, append([]string{"-A", nsChain}, append(args, "-j", "DROP")...)...)
		errs = append(errs, err)
	}
	for _, ip := range peers {
		if shape != cutOut {
			add("-s", ip)
		}
		if shape != cutIn {
			add("-d", ip)
		}
	}
	for _, hook := range []string{"INPUT", "OUTPUT"} {
		_, err := nsIptables(ctx, n, "-I", hook, "-j", nsChain)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err == nil {
		cut()
		wait(ctx, hold)
	}
	hctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var dropped int64
	if out, err := nsIptables(hctx, n, "-L", nsChain, "-v", "-n", "-x"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			if fs := strings.Fields(line); len(fs) > 2 && fs[2] == "DROP" {
				if v, err := strconv.ParseInt(fs[0], 10, 64); err == nil {
					dropped += v
				}
			}
		}
	}
	for _, hook := range []string{"INPUT", "OUTPUT"} {
		_, _ = nsIptables(hctx, n, "-D", hook, "-j", nsChain)
	}
	_, _ = nsIptables(hctx, n, "-F", nsChain)
	_, _ = nsIptables(hctx, n, "-X", nsChain)
	return dropped, errors.Join(errs...)
}

// hostLoss loses a broker-only host with its disk: it removes the
// container and its volume, waits hold, starts a new broker with a new id
// and an empty volume at the same address and hostname, and reassigns
// every partition that had a replica on the lost broker to the new one
// (AlterPartitionReassignments, as `sluice topics reassign --execute`).
// Its effect is the new broker in the ISR of every partition moved to it.
// It returns why it was skipped ("" if it was not).
func (f *faulter) hostLoss(ctx context.Context, fl *Fault, st step, hold time.Duration) (string, error) {
	d := f.hosts
	d.mu.Lock()
	var cands, voters []*dockerNode
	for _, n := range d.nodes {
		if !n.voter {
			cands = append(cands, n)
		} else {
			voters = append(voters, n)
		}
	}
	turn := d.hostLosses
	d.hostLosses++
	d.mu.Unlock()
	// Every other host loss (the first included) is a controller's: with
	// three voters or more, a majority stays while one is replaced.
	if turn%2 == 0 && len(voters) >= 3 {
		return "", f.replaceVoter(ctx, fl, voters[st.Partition%len(voters)], hold)
	}
	if len(cands) == 0 {
		return "no broker-only node to lose (add deploy/compose.brokers.yaml: a lost voter is a quorum change)", nil
	}
	old := cands[st.Partition%len(cands)]
	d.mu.Lock()
	newID := d.nextID
	d.nextID++
	d.mu.Unlock()
	// The replacement is a new host: a new id, hostname and address (the
	// quorum keeps the lost broker's entry, as an observer at its
	// address, until an operator removes it), the same host port.
	ip := net.ParseIP(old.ip).To4()
	if ip == nil {
		return fmt.Sprintf("node %d's address %s is no IPv4 address", old.id, old.ip), nil
	}
	ip[3] = byte(newID)
	n := &dockerNode{id: newID, service: fmt.Sprintf("sluice-%d", newID), ip: ip.String(), ports: old.ports,
		volume: fmt.Sprintf("%s_host-%d", d.project, newID)}
	fl.Nodes = []int32{old.id, newID}
	fl.Target = fmt.Sprintf("node %d (%s, %s, volume %s) lost with its disk; new broker %d (%s, %s, empty volume)", old.id, old.service, old.ip, old.volume, newID, n.service, n.ip)
	rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := command(rctx, "docker", "rm", "--force", "--volumes", old.container); err != nil {
		return "", err
	}
	if old.volume != "" {
		if _, err := command(rctx, "docker", "volume", "rm", "--force", old.volume); err != nil {
			return "", err
		}
	}
	wait(ctx, hold)
	for _, kv := range old.env {
		switch {
		case strings.HasPrefix(kv, "SLUICE_NODE_ID="):
			kv = "SLUICE_NODE_ID=" + strconv.Itoa(int(newID))
		case strings.HasPrefix(kv, "SLUICE_ADVERTISED_LISTENERS="):
			kv = strings.ReplaceAll(kv, "//"+old.service+":", "//"+n.service+":")
		}
		n.env = append(n.env, kv)
	}
	if err := d.run(rctx, n, fmt.Sprintf("%s-host-%d", d.project, newID)); err != nil {
		return "", err
	}
	d.mu.Lock()
	for i, o := range d.nodes {
		if o == old {
			d.nodes[i] = n
		}
	}
	d.mu.Unlock()
	if err := d.waitReady(rctx, n, 90*time.Second); err != nil {
		fl.NoEffect = err.Error()
		return "", err
	}
	moved, took, err := f.reassign(rctx, old.id, newID)
	switch {
	case err != nil:
		fl.NoEffect = fmt.Sprintf("reassignment %d→%d not done: %v", old.id, newID, err)
	case moved == 0:
		fl.NoEffect = fmt.Sprintf("broker %d held no replica: nothing moved to %d", old.id, newID)
	default:
		fl.Effect = fmt.Sprintf("%d partitions reassigned %d→%d, all in sync on the new empty disk %v after the reassignment", moved, old.id, newID, took.Round(10*time.Millisecond))
	}
	return "", err
}

// reassign moves every replica on broker from (of every topic, the
// internal ones too) to broker to and waits until no reassignment is
// pending and to is in the ISR of each moved partition.
func (f *faulter) reassign(ctx context.Context, from, to int32) (int, time.Duration, error) {
	md, err := f.adm.Metadata(ctx)
	if err != nil {
		return 0, 0, err
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	moved := kadm.TopicsSet{}
	for t, td := range md.Topics {
		for p, pd := range td.Partitions {
			if i := slices.Index(pd.Replicas, from); i >= 0 {
				rs := slices.Clone(pd.Replicas)
				rs[i] = to
				req.Assign(t, p, rs)
				moved.Add(t, p)
			}
		}
	}
	if len(moved) == 0 {
		return 0, 0, nil
	}
	start := time.Now()
	resps, err := f.adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	count := 0
	for _, ps := range resps {
		for _, r := range ps {
			if r.Err != nil {
				return 0, 0, fmt.Errorf("%s/%d: %v", r.Topic, r.Partition, r.Err)
			}
			count++
		}
	}
	for {
		pending := 0
		if lr, err := f.adm.ListPartitionReassignments(ctx, moved); err == nil {
			for _, ps := range lr {
				pending += len(ps)
			}
		} else {
			pending = -1
		}
		if pending == 0 {
			if md, err := f.adm.Metadata(ctx, moved.Topics()...); err == nil {
				behind := 0
				for t, ps := range moved {
					for p := range ps {
						if !slices.Contains(md.Topics[t].Partitions[p].ISR, to) {
							behind++
						}
					}
				}
				if behind == 0 {
					return count, time.Since(start), nil
				}
			}
		}
		if !wait(ctx, 500*time.Millisecond) {
			return count, 0, fmt.Errorf("%d partitions: reassignment pending or the new broker not in sync after %v", count, time.Since(start).Round(time.Second))
		}
	}
}
