package quorum

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

func TestLiveness(t *testing.T) {
	im := NewImage()
	reg := func(id int32, fenced bool) {
		im.LastBrokerEpoch++
		im.Brokers[id] = &Broker{ID: id, Epoch: im.LastBrokerEpoch, Fenced: fenced}
	}
	reg(1, false) // epoch 1
	reg(2, true)  // epoch 2
	reg(3, false) // epoch 3
	reg(4, true)  // epoch 4
	t0 := time.Unix(1000, 0)
	l := Liveness{SessionTimeout: 3 * time.Second}
	l.Reset(t0)
	decide := func(at time.Duration) string {
		var s []string
		for _, c := range l.Decide(im, t0.Add(at)) {
			s = append(s, strings.NewReplacer("*quorum.", "", "&", "").Replace(fmt.Sprintf("%T%+v", c, c)))
		}
		return strings.Join(s, " ")
	}
	check := func(at time.Duration, want string) {
		t.Helper()
		if got := decide(at); got != want {
			t.Fatalf("at %v: got %q, want %q", at, got, want)
		}
	}
	// A new controller gives everybody a session: nothing happens at once.
	check(0, "")
	l.Alive(1, 1, t0.Add(time.Second))
	l.Alive(2, 2, t0.Add(time.Second)) // fenced, alive with its current epoch
	l.Alive(4, 3, t0.Add(time.Second)) // fenced, alive with an old epoch
	check(time.Second, "UnfenceBroker{ID:2 Epoch:2}")
	// Broker 3 was never seen: its session expires.
	check(3*time.Second+1, "UnfenceBroker{ID:2 Epoch:2} FenceBroker{ID:3 Epoch:3}")
	im.Brokers[2].Fenced = false
	im.Brokers[3].Fenced = true
	// Gossip declares 1 dead: fenced at once, before its session ends.
	l.Dead(1, t0.Add(2*time.Second))
	check(2*time.Second, "FenceBroker{ID:1 Epoch:1}")
	im.Brokers[1].Fenced = true
	// 1 restarts and registers again (epoch 5); gossip sees the new epoch.
	im.LastBrokerEpoch++
	im.Brokers[1] = &Broker{ID: 1, Epoch: im.LastBrokerEpoch, Fenced: true}
	l.Alive(1, 5, t0.Add(4*time.Second))
	l.Alive(2, 2, t0.Add(4*time.Second))
	check(4*time.Second, "UnfenceBroker{ID:1 Epoch:5}")
	// 3 comes back as a new process that has not registered yet (epoch 0)
	// while its old registration is unfenced: the old one is fenced.
	im.Brokers[3].Fenced = false
	l.Alive(3, 0, t0.Add(4*time.Second))
	check(4*time.Second, "UnfenceBroker{ID:1 Epoch:5} FenceBroker{ID:3 Epoch:3}")
	im.Brokers[3].Fenced = true
	// A broker shutting down is not unfenced.
	im.Brokers[1].ShuttingDown = true
	check(4*time.Second, "")
	// Unseen for a session: 2 is fenced.
	check(7*time.Second+1, "FenceBroker{ID:2 Epoch:2}")
}

// TestLivenessScript runs testdata/liveness/timeline.txt: timelines of gossip,
// session and probe evidence, and what the active controller decides.
//
//	register id=N [fenced] [shutting-down]   a (new) registration; prints its epoch
//	reset at=D                               this controller becomes active
//	alive id=N epoch=E at=D                  gossip sees N alive advertising E
//	dead id=N at=D                           gossip declares N dead
//	refused id=N [epoch=E]                   a probe of N's listener was refused
//	answered id=N [epoch=E]                  a probe of N's listener was accepted
//	silent id=N [epoch=E] at=D               a probe of N's listener timed out (another answered)
//	decide at=D                              the commands, applied to the image
//
// E defaults to N's registered epoch; D is a duration from the start.
func TestLivenessScript(t *testing.T) {
	s := &livenessHarness{im: NewImage()}
	datadriven.RunTest(t, filepath.Join("testdata", "liveness", "timeline.txt"), s.step)
}

type livenessHarness struct {
	im *Image
	l  Liveness
}

func (s *livenessHarness) step(t *testing.T, d *datadriven.TestData) string {
	t0 := time.Unix(1000, 0)
	at := func() time.Time {
		v, ok := arg(d, "at")
		if !ok {
			t.Fatalf("%s: at= is required", d.Pos)
		}
		dur, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s: at=%s: %v", d.Pos, v, err)
		}
		return t0.Add(dur)
	}
	id := int32(argInt(t, d, "id", 0))
	epoch := func() int64 {
		b := s.im.Brokers[id]
		def := int64(0)
		if b != nil {
			def = b.Epoch
		}
		return argInt(t, d, "epoch", def)
	}
	switch d.Cmd {
	case "register":
		s.im.LastBrokerEpoch++
		s.im.Brokers[id] = &Broker{ID: id, Epoch: s.im.LastBrokerEpoch, Fenced: d.HasArg("fenced"), ShuttingDown: d.HasArg("shutting-down")}
		return fmt.Sprintf("broker %d epoch %d", id, s.im.LastBrokerEpoch)
	case "reset":
		s.l = Liveness{SessionTimeout: time.Duration(argInt(t, d, "session-ms", 9000)) * time.Millisecond}
		s.l.Reset(at())
		return "ok"
	case "alive":
		s.l.Alive(id, epoch(), at())
		return "ok"
	case "dead":
		s.l.Dead(id, at())
		return "ok"
	case "refused":
		s.l.Refused(id, epoch())
		return "ok"
	case "answered":
		s.l.Answered(id, epoch())
		return "ok"
	case "silent":
		s.l.Silent(id, epoch(), at())
		return "ok"
	case "decide":
		var out []string
		for _, c := range s.l.Decide(s.im, at()) {
			switch c := c.(type) {
			case *FenceBroker:
				s.im.Brokers[c.ID].Fenced = true
				out = append(out, fmt.Sprintf("fence %d epoch %d", c.ID, c.Epoch))
			case *UnfenceBroker:
				s.im.Brokers[c.ID].Fenced = false
				out = append(out, fmt.Sprintf("unfence %d epoch %d", c.ID, c.Epoch))
			}
		}
		if len(out) == 0 {
			return "nothing"
		}
		return strings.Join(out, "\n")
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}
