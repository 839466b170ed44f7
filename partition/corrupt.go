package partition

// LogCorrupt: the node found a bad batch in this replica's own log (a
// scrub or a read; segment.CorruptionError); Offset is the first offset it
// lost. Beyond Kafka, the replica repairs itself from another copy:
//
//   - A follower truncates before the damage (Ready.Truncate, not counted
//     as an unclean loss: the leader holds those records) and fetches
//     again from there; the fetch in flight, if any, is forgotten.
//   - A leader with another ISR member resigns: it proposes the ISR
//     without itself (the controller elects another member, see
//     quorum's AlterPartition) and, once the metadata makes it a follower,
//     truncates as above.
//   - A leader that is the only in-sync copy keeps leading: the node
//     serves what is valid below the damage and reports it. It resigns
//     as soon as another member joins the ISR.
type LogCorrupt struct{ Offset int64 }

func (LogCorrupt) isMsg() {}

func (r *Replica) logCorrupt(m LogCorrupt) {
	if m.Offset < 0 || m.Offset >= r.leo {
		return
	}
	if r.damage < 0 || m.Offset < r.damage {
		r.damage = m.Offset
	}
	r.repair()
}

// repair acts on known damage: a follower truncates, a leader resigns.
func (r *Replica) repair() {
	if r.damage < 0 {
		return
	}
	if r.damage >= r.leo {
		r.damage = -1
		return
	}
	switch r.role {
	case Follower:
		if r.trunc != nil && (r.trunc.Fully || r.trunc.Offset <= r.damage) {
			return // a deeper cut is already due
		}
		r.trunc = &Truncation{Offset: r.damage, From: r.leo, BelowHW: -1}
		r.fetchPending = false // its answer would continue the old log end
	case Leader:
		r.maybeResign()
	}
}

// maybeResign proposes the ISR without this leader when its log is
// damaged and another member can take over.
func (r *Replica) maybeResign() {
	if r.role != Leader || r.damage < 0 || !r.canPropose() {
		return
	}
	var rest []int32
	for _, id := range r.isr {
		if id != r.cfg.ID {
			rest = append(rest, id)
		}
	}
	if len(rest) > 0 {
		r.proposeISR(rest)
	}
}

// Damage is the first offset of known damage in the replica's own log
// (LogCorrupt) not yet truncated away, or -1.
func (r *Replica) Damage() int64 { return r.damage }
