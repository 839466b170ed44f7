package quorum

import "time"

// Liveness decides which brokers to fence and unfence. It is a pure state
// machine: observations and the clock come in as arguments, commands go out;
// the gossip driver (gossip.go) feeds it memberlist's view on the active
// controller.
//
// Gossip and probes are fast hints, the Raft-committed broker epoch the
// authority:
//   - A broker is fenced when gossip reports it dead, or when it has not been
//     seen alive for SessionTimeout (counted from when this controller became
//     active, so a new controller gives every broker a fresh session).
//   - A broker is fenced when its Kafka listener refused RefusalsToFence
//     connections in a row (probes by the active controller, each a TCP
//     connect): nothing listens on its port any more, but its host answered,
//     so its process is gone. A probe that times out proves nothing (a host
//     down, a partition, a paused process whose kernel still accepts): gossip
//     and the session timeout decide those. A refused broker is not unfenced
//     until a probe is answered again or it registers a new epoch.
//   - A broker is fenced when its listener went silent: probes timed out
//     (or found its host unreachable) in a row for SilenceToFence over at
//     least SilentRoundsToFence rounds, each round one in which another
//     broker's listener answered this controller. A host that is gone or
//     cut off (docker kill, a lost host, a disconnected network) sends no
//     refusal, only silence; the answering peer proves that the silence
//     is not this controller's own (starved, or its network down), and a
//     live host's kernel answers a connect even while its process is
//     paused or loaded, so a slow broker is not silent. Silent brokers stay
//     fenced like refused ones.
//   - An unfenced broker seen alive with another epoch than its registration
//     is a new incarnation (restarted, not registered yet): the registered one
//     is fenced.
//   - A fenced broker is unfenced when gossip sees it alive advertising the
//     epoch of its current registration (a restarted broker advertises its
//     new epoch only after it registered, and should only do so once it has
//     caught up with the metadata log). Brokers in controlled shutdown are
//     left alone.
//   - Commands name the epoch they were decided for, so a fence or unfence
//     that raced with a re-registration fails with STALE_BROKER_EPOCH.
type Liveness struct {
	SessionTimeout time.Duration

	since  time.Time
	seen   map[int32]observation
	probes map[int32]probe
}

// RefusalsToFence is how many connections in a row a broker's listener
// must refuse before it is fenced: one could be a listener being
// re-bound; two, a probe interval apart, are a process that is gone.
const RefusalsToFence = 2

// SilenceToFence and SilentRoundsToFence: how long, and over how many
// probe rounds, a broker's listener must have stayed silent (timeouts,
// host unreachable) in a row, while another broker answered each round,
// before it is fenced. Two seconds is eight rounds at the default 250 ms
// probe interval: under 5% packet loss each way a live host's probe times
// out about one round in ten, eight in a row about once in 10^8.
const (
	SilenceToFence      = 2 * time.Second
	SilentRoundsToFence = 4
)

// probe is what the probes found of a broker's registration epoch: the
// current run of refusals or of silent rounds (one ends the other).
type probe struct {
	epoch           int64
	refused, silent streak
}

// streak is a run of like probe results in a row, the first at since.
type streak struct {
	n     int
	since time.Time
}

// probeOf returns what the probes found of broker id at epoch (nothing
// yet for a new epoch).
func (l *Liveness) probeOf(id int32, epoch int64) probe {
	if l.probes == nil {
		l.probes = map[int32]probe{}
	}
	if p := l.probes[id]; p.epoch == epoch {
		return p
	}
	return probe{epoch: epoch}
}

// extend adds one result at now to s.
func (s streak) extend(now time.Time) streak {
	if s.n == 0 {
		s.since = now
	}
	s.n++
	return s
}

type observation struct {
	epoch int64
	at    time.Time
	dead  bool
}

// Reset starts a new session for every broker, at now: call it when this
// node becomes the active controller.
func (l *Liveness) Reset(now time.Time) {
	l.since = now
	l.seen = map[int32]observation{}
	l.probes = map[int32]probe{}
}

// Refused records that a connection to the listener of broker id,
// registered with epoch, was refused at now.
func (l *Liveness) Refused(id int32, epoch int64, now time.Time) {
	p := l.probeOf(id, epoch)
	p.refused, p.silent = p.refused.extend(now), streak{}
	l.probes[id] = p
}

// Silent records that a probe of the listener of broker id, registered
// with epoch, timed out or found its host unreachable at now, in a round
// in which another broker's listener answered (the driver's check: a
// round in which nothing answered is no evidence and is not recorded).
func (l *Liveness) Silent(id int32, epoch int64, now time.Time) {
	p := l.probeOf(id, epoch)
	p.silent, p.refused = p.silent.extend(now), streak{}
	l.probes[id] = p
}

// Answered records that the listener of broker id, registered with
// epoch, accepted a connection.
func (l *Liveness) Answered(id int32, epoch int64) {
	p := l.probeOf(id, epoch)
	p.refused, p.silent = streak{}, streak{}
	l.probes[id] = p
}

// Alive records that gossip sees broker id alive, advertising epoch.
func (l *Liveness) Alive(id int32, epoch int64, now time.Time) {
	if l.seen == nil {
		l.seen = map[int32]observation{}
	}
	l.seen[id] = observation{epoch: epoch, at: now}
}

// Dead records that gossip declared broker id dead (or that it left).
func (l *Liveness) Dead(id int32, now time.Time) {
	if l.seen == nil {
		l.seen = map[int32]observation{}
	}
	o := l.seen[id]
	o.dead, o.at = true, now
	l.seen[id] = o
}

// Refusing says whether the probes found broker id's listener (of its
// registration epoch) refusing connections in a row, enough to fence it.
func (l *Liveness) Refusing(id int32, epoch int64) bool {
	p := l.probes[id]
	return p.epoch == epoch && p.refused.n >= RefusalsToFence
}

// Silenced says whether broker id's listener (of its registration epoch)
// has been silent long enough to fence it at now (see Silent).
func (l *Liveness) Silenced(id int32, epoch int64, now time.Time) bool {
	p := l.probes[id]
	return p.epoch == epoch && p.silent.n >= SilentRoundsToFence && now.Sub(p.silent.since) >= SilenceToFence
}

// Decide returns the fence and unfence commands the image needs now, in
// broker id order.
func (l *Liveness) Decide(im *Image, now time.Time) []Command {
	var out []Command
	for _, id := range im.SortedBrokers() {
		b := im.Brokers[id]
		o, ok := l.seen[id]
		last := l.since
		if ok && o.at.After(last) {
			last = o.at
		}
		expired := now.Sub(last) > l.SessionTimeout
		gone := l.Refusing(id, b.Epoch) || l.Silenced(id, b.Epoch, now)
		switch {
		case !b.Fenced && (expired || gone || ok && (o.dead || o.epoch != b.Epoch)):
			out = append(out, &FenceBroker{ID: id, Epoch: b.Epoch})
		case b.Fenced && !b.ShuttingDown && !gone && ok && !o.dead && !expired && o.epoch == b.Epoch:
			out = append(out, &UnfenceBroker{ID: id, Epoch: b.Epoch})
		}
	}
	return out
}

// FenceCause is why Decide fences a broker: the cause label of
// sluice_controller_fences_total.
type FenceCause string

// The fence causes, in the order Cause names them when several hold.
const (
	FenceProbeRefused   FenceCause = "probe_refused"
	FenceProbeSilent    FenceCause = "probe_silent"
	FenceGossipDead     FenceCause = "gossip_dead"
	FenceNewIncarnation FenceCause = "new_incarnation"
	FenceSessionTimeout FenceCause = "session_timeout"
)

// FenceCauses lists every FenceCause.
var FenceCauses = []FenceCause{FenceProbeRefused, FenceProbeSilent, FenceGossipDead, FenceNewIncarnation, FenceSessionTimeout}

// Cause says why Decide fences broker id, registered with epoch, at now,
// and since when the evidence shows it gone: the first refusal of the
// probes' streak, the first silent probe of its streak, gossip's dead event, the sighting of another epoch, or
// when it was last seen alive (the session's start if never). The
// active controller times a failover from there (time to new leader,
// sluice_controller_failover_seconds). ok is false when Decide would not
// fence it.
func (l *Liveness) Cause(id int32, epoch int64, now time.Time) (cause FenceCause, since time.Time, ok bool) {
	o, seen := l.seen[id]
	last := l.since
	if seen && o.at.After(last) {
		last = o.at
	}
	switch {
	case l.Refusing(id, epoch):
		return FenceProbeRefused, l.probes[id].refused.since, true
	case l.Silenced(id, epoch, now):
		return FenceProbeSilent, l.probes[id].silent.since, true
	case seen && o.dead:
		return FenceGossipDead, o.at, true
	case seen && o.epoch != epoch:
		return FenceNewIncarnation, o.at, true
	case now.Sub(last) > l.SessionTimeout:
		return FenceSessionTimeout, last, true
	}
	return "", time.Time{}, false
}
