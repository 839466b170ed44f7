package quorum

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"
)

// SnapshotVersion is the version of the snapshot encoding: 2 is the
// binary encoding (codec_snapshot.go), 1 the JSON of older builds, still
// read.
const SnapshotVersion = 2

// Change is one step of the applied metadata stream, delivered in log order.
type Change struct {
	// Index is the Raft log index of the entry (or of the snapshot restored).
	Index uint64
	// Records are the records of the entry that were applied; Restored
	// changes carry none: the receiver must reread the whole image.
	Records []Record
	// Rejected are records Replay skipped as stale, with the reasons.
	Rejected []error
	// Restored is true when the image was replaced from a snapshot; Image
	// is then a copy of the new image, owned by the receiver.
	Restored bool
	Image    *Image
}

// FSM is the raft.FSM of the controller: it owns the metadata Image and
// changes it only by replaying committed entries. Apply, Snapshot and Restore
// are called by raft (one goroutine at a time for Apply and Restore); View,
// Image and AppliedIndex may be called concurrently from any goroutine.
type FSM struct {
	onApply func(Change)

	mu      sync.RWMutex
	im      *Image
	applied uint64
	// advanced is closed and replaced (under mu) whenever applied moves:
	// WaitApplied waits on it.
	advanced chan struct{}
}

var _ raft.FSM = (*FSM)(nil)

// NewFSM returns an FSM with an empty image. onApply, if not nil, receives
// every change after it is visible to View; it runs on raft's FSM goroutine,
// so it must be quick and must not call Controller.Propose.
func NewFSM(onApply func(Change)) *FSM {
	return &FSM{im: NewImage(), onApply: onApply, advanced: make(chan struct{})}
}

// Apply implements raft.FSM. It returns nil, or an error wrapping
// ErrStaleRecord when a record was skipped (the first such reason).
// An entry that does not decode is a corrupt log: Apply panics.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	recs, err := DecodeEntry(l.Data)
	if err != nil {
		panic(fmt.Sprintf("quorum: raft log index %d term %d: %v", l.Index, l.Term, err))
	}
	ch := Change{Index: l.Index}
	f.mu.Lock()
	for _, r := range recs {
		if err := f.im.Replay(r); err != nil {
			ch.Rejected = append(ch.Rejected, err)
			continue
		}
		ch.Records = append(ch.Records, r)
	}
	f.applied = l.Index
	f.advance()
	if invariantsOn {
		if err := f.im.CheckInvariants(); err != nil {
			panic(fmt.Sprintf("quorum: after log index %d: %v", l.Index, err))
		}
	}
	f.mu.Unlock()
	if f.onApply != nil {
		f.onApply(ch)
	}
	if len(ch.Rejected) > 0 {
		return ch.Rejected[0]
	}
	return nil
}

// View calls fn with the image under the read lock. fn must not keep the
// image or anything in it after returning, and must not change it.
func (f *FSM) View(fn func(im *Image)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(f.im)
}

// Image returns a deep copy of the image, owned by the caller. It costs
// O(image) (seconds at a million partitions): a reader of a few topics
// uses View, and copies what it keeps (Topic.Clone).
func (f *FSM) Image() *Image {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.im.Clone()
}

// AppliedIndex returns the log index of the last applied entry.
func (f *FSM) AppliedIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.applied
}

// ImageAt returns a deep copy of the image and the log index it holds;
// O(image), as Image.
func (f *FSM) ImageAt() (*Image, uint64) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.im.Clone(), f.applied
}

// advance wakes the waiters of WaitApplied; f.mu must be held.
func (f *FSM) advance() {
	close(f.advanced)
	f.advanced = make(chan struct{})
}

// WaitApplied waits until the image holds log index index (or a later
// one) and returns nil, or ctx.Err() when ctx ends first.
func (f *FSM) WaitApplied(ctx context.Context, index uint64) error {
	for {
		f.mu.RLock()
		applied, ch := f.applied, f.advanced
		f.mu.RUnlock()
		if applied >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Snapshot implements raft.FSM: it copies the image under the read lock;
// encoding happens later in Persist, off the FSM goroutine.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return &fsmSnapshot{im: f.im.Clone(), applied: f.applied}, nil
}

// Restore implements raft.FSM: it replaces the image with a snapshot's.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	im, applied, err := ReadSnapshot(rc)
	if err != nil {
		return err
	}
	var ch Change
	if f.onApply != nil {
		ch = Change{Index: applied, Restored: true, Image: im.Clone()}
	}
	f.mu.Lock()
	f.im, f.applied = im, applied
	f.advance()
	f.mu.Unlock()
	if f.onApply != nil {
		f.onApply(ch)
	}
	return nil
}

type fsmSnapshot struct {
	im      *Image
	applied uint64
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := WriteSnapshot(sink, s.im, s.applied); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

// PartitionRef names one partition by topic id.
type PartitionRef struct {
	TopicID   UUID  `json:"topic_id"`
	Partition int32 `json:"partition"`
}

// Touched returns, in record order, the partitions whose replicas, leader or
// ISR this change set (created or changed), and the topics it removed: what
// a node looks at to become leader or follower. A Restored change names
// nothing: the node must compare its state with the whole Change.Image.
func (ch Change) Touched() (parts []PartitionRef, removed []UUID) {
	for _, r := range ch.Records {
		switch r := r.(type) {
		case *CreateTopicRecord:
			for i := range r.Partitions {
				parts = append(parts, PartitionRef{TopicID: r.ID, Partition: int32(i)})
			}
		case *PartitionChangeRecord:
			parts = append(parts, PartitionRef{TopicID: r.TopicID, Partition: r.Partition})
		case *RemoveTopicRecord:
			removed = append(removed, r.ID)
		}
	}
	return parts, removed
}
