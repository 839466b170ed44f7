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

// probe is what the probes found of a broker's registration epoch.
type probe struct {
	epoch    int64
	refusals int // in a row, for epoch
	// silent rounds in a row (see Silent), the first at silentSince.
	silent      int
	silentSince time.Time
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
// registered with epoch, was refused.
func (l *Liveness) Refused(id int32, epoch int64) {
	if l.probes == nil {
		l.probes = map[int32]probe{}
	}
	p := l.probes[id]
	if p.epoch != epoch {
		p = probe{epoch: epoch}
	}
	p.refusals++
	p.silent = 0
	l.probes[id] = p
}

// Silent records that a probe of the listener of broker id, registered
// with epoch, timed out or found its host unreachable at now, in a round
// in which another broker's listener answered (the driver's check: a
// round in which nothing answered is no evidence and is not recorded).
func (l *Liveness) Silent(id int32, epoch int64, now time.Time) {
	if l.probes == nil {
		l.probes = map[int32]probe{}
	}
	p := l.probes[id]
	if p.epoch != epoch {
		p = probe{epoch: epoch}
	}
	if p.silent == 0 {
		p.silentSince = now
	}
	p.silent++
	p.refusals = 0
	l.probes[id] = p
}

// Answered records that the listener of broker id, registered with
// epoch, accepted a connection.
func (l *Liveness) Answered(id int32, epoch int64) {
	if l.probes == nil {
		l.probes = map[int32]probe{}
	}
	l.probes[id] = probe{epoch: epoch}
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
	return p.epoch == epoch && p.refusals >= RefusalsToFence
}

// Silenced says whether broker id's listener (of its registration epoch)
// has been silent long enough to fence it at now (see Silent).
func (l *Liveness) Silenced(id int32, epoch int64, now time.Time) bool {
	p := l.probes[id]
	return p.epoch == epoch && p.silent >= SilentRoundsToFence && now.Sub(p.silentSince) >= SilenceToFence
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
