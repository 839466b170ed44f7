package admin

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseDatetime(t *testing.T) {
	utc := time.UTC
	cet := time.FixedZone("CET", 3600)
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"2026-12-01T09:00:00.000", time.Date(2026, 12, 1, 9, 0, 0, 0, cet)},
		{"2026-12-01T09:00:00.123Z", time.Date(2026, 12, 1, 9, 0, 0, 123e6, utc)},
		{"2026-12-01T09:00:00Z", time.Date(2026, 12, 1, 9, 0, 0, 0, utc)},
		{"2026-12-01T09:00", time.Date(2026, 12, 1, 9, 0, 0, 0, cet)},
		{"2026-12-01T09:00:00.5+02:00", time.Date(2026, 12, 1, 7, 0, 0, 5e8, utc)},
		{"2026-12-01T09:00:00-0130", time.Date(2026, 12, 1, 10, 30, 0, 0, utc)},
		{"2026-12-01T09:00:00+05", time.Date(2026, 12, 1, 4, 0, 0, 0, utc)},
	} {
		got, err := parseDatetime(c.in, cet)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("parseDatetime(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "yesterday", "2026-12-01", "2026-12-01 09:00:00", "2026-13-01T09:00:00", "2026-12-01T25:00:00Z", "2026-12-01T09:00:00.Z", "2026-12-01T09:00:00+5"} {
		if _, err := parseDatetime(in, utc); err == nil || !strings.Contains(err.Error(), "--to-datetime") {
			t.Errorf("parseDatetime(%q): err %v, want one naming --to-datetime", in, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"PT30M":    30 * time.Minute,
		"P1DT2H":   26 * time.Hour,
		"P2D":      48 * time.Hour,
		"PT1.5S":   1500 * time.Millisecond,
		"pt10s":    10 * time.Second,
		"PT1H2M3S": time.Hour + 2*time.Minute + 3*time.Second,
		"+PT1M":    time.Minute,
		"30m":      30 * time.Minute,
		"1h30m":    90 * time.Minute,
		"PT0S":     0,
		"P0D":      0,
		"PT0.001S": time.Millisecond,
	} {
		got, err := parseDuration(in)
		if err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "P", "PT", "P1H", "PT1D", "-PT1M", "-5m", "P1DT0H0M1", "P99999999999999999999D", "P106751DT23H47M17S", "soon"} {
		if _, err := parseDuration(in); err == nil || !strings.Contains(err.Error(), "--by-duration") {
			t.Errorf("parseDuration(%q): err %v, want one naming --by-duration", in, err)
		}
	}
}

func TestParseTopicScopes(t *testing.T) {
	got, err := parseTopicScopes([]string{"orders", "pay:0,2, 2", "a.b-c_d:7"})
	want := []topicScope{{topic: "orders"}, {topic: "pay", partitions: []int32{0, 2}}, {topic: "a.b-c_d", partitions: []int32{7}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseTopicScopes = %+v, %v; want %+v", got, err, want)
	}
	for _, in := range []string{"", ":0", "t:", "t:x", "t:-1", "t:0,,1", "t:99999999999"} {
		if _, err := parseTopicScopes([]string{in}); err == nil || !strings.Contains(err.Error(), "--topic") {
			t.Errorf("parseTopicScopes(%q): err %v, want one naming --topic", in, err)
		}
	}
}

func TestResetPlanWantsOneScenario(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		spec resetSpec
		want resetTo
	}{
		{resetSpec{earliest: true}, resetTo{kind: "earliest"}},
		{resetSpec{latest: true}, resetTo{kind: "latest"}},
		{resetSpec{current: true}, resetTo{kind: "current"}},
		{resetSpec{offsetSet: true, toOffset: 0}, resetTo{kind: "offset"}},
		{resetSpec{shiftSet: true, shiftBy: -5}, resetTo{kind: "shift", offset: -5}},
		{resetSpec{duration: "PT1H"}, resetTo{kind: "time", millis: now.Add(-time.Hour).UnixMilli()}},
		{resetSpec{datetime: "2026-12-01T09:00:00Z"}, resetTo{kind: "time", millis: now.Add(-3 * time.Hour).UnixMilli()}},
	} {
		got, err := c.spec.plan(now)
		if err != nil || got != c.want {
			t.Errorf("%+v: plan = %+v, %v; want %+v", c.spec, got, err, c.want)
		}
	}
	for _, spec := range []resetSpec{{}, {earliest: true, latest: true}, {offsetSet: true, toOffset: -1}, {shiftSet: true, current: true}} {
		if _, err := spec.plan(now); err == nil {
			t.Errorf("%+v: plan accepted it", spec)
		}
	}
}

func TestCanonicalStates(t *testing.T) {
	got, shown, err := canonical("state", []string{"stable", " EMPTY", anyState}, groupStates)
	if err != nil || !shown || !reflect.DeepEqual(got, []string{"Stable", "Empty"}) {
		t.Fatalf("canonical = %v, %v, %v", got, shown, err)
	}
	if got, shown, err := canonical("state", []string{anyState}, groupStates); err != nil || !shown || got != nil {
		t.Fatalf("bare --state = %v, %v, %v", got, shown, err)
	}
	if _, _, err := canonical("type", []string{"share"}, []string{"classic", "consumer"}); err == nil || !strings.Contains(err.Error(), "classic, consumer") {
		t.Fatalf("unknown type: %v", err)
	}
}

// The parsers of the reset flags take any string without panicking, and
// what they accept is well-formed.
func FuzzParseDatetime(f *testing.F) {
	for _, s := range []string{"2026-12-01T09:00:00.000", "2026-12-01T09:00Z", "2026-12-01T09:00:00.5+02:00", "2026-02-30T00:00:00-0130"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := parseDatetime(s, time.UTC); err == nil && !datetimeRe.MatchString(s) {
			t.Fatalf("accepted %q", s)
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"PT30M", "P1DT2H", "PT1.5S", "30m", "-PT1M", "P106751DT23H47M16S"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := parseDuration(s); err == nil && d < 0 {
			t.Fatalf("parseDuration(%q) = %v: negative", s, d)
		}
	})
}

func FuzzParseTopicScopes(f *testing.F) {
	for _, s := range []string{"orders", "orders:0,1", "a:b:c", "t:2147483647", "t: 3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		scopes, err := parseTopicScopes([]string{s})
		if err != nil {
			return
		}
		for _, sc := range scopes {
			if sc.topic == "" || strings.Contains(sc.topic, ":") {
				t.Fatalf("%q: topic %q", s, sc.topic)
			}
			for _, p := range sc.partitions {
				if p < 0 {
					t.Fatalf("%q: partition %d", s, p)
				}
			}
		}
	})
}

func TestListOptionalValues(t *testing.T) {
	for _, c := range []struct {
		states, types, args []string
		wantS, wantT        []string
		bad                 bool
	}{
		{states: []string{anyState}, args: []string{"Stable,Empty"}, wantS: []string{"Stable", "Empty"}},
		{types: []string{anyState}, args: []string{"classic"}, wantT: []string{"classic"}},
		{states: []string{anyState}, types: []string{"consumer"}, args: []string{"Stable"}, wantS: []string{"Stable"}, wantT: []string{"consumer"}},
		{states: []string{"Stable"}, wantS: []string{"Stable"}},
		{args: []string{"Stable"}, bad: true},
		{states: []string{anyState}, types: []string{anyState}, args: []string{"x"}, bad: true},
	} {
		g := groupsCmd{states: c.states, types: c.types, args: c.args}
		err := g.optionalValues()
		if c.bad != (err != nil) || !c.bad && (!reflect.DeepEqual(g.states, c.wantS) || !reflect.DeepEqual(g.types, c.wantT)) {
			t.Errorf("%+v: states %v types %v err %v", c, g.states, g.types, err)
		}
	}
}

// rebalance.time.ms adds up the spells without an assignment: from the
// start, and from each revocation or loss to the next assignment.
func TestRebalanceClock(t *testing.T) {
	at := time.Unix(1000, 0)
	r := &rebalanceClock{now: func() time.Time { return at }, since: at}
	step := func(d time.Duration) { at = at.Add(d) }
	step(300 * time.Millisecond)
	r.assigned(nil, nil, nil) // joined: 300 ms
	step(5 * time.Second)     // consuming
	r.lost(nil, nil, nil)
	step(100 * time.Millisecond)
	r.lost(nil, nil, nil) // revoked, then lost: the spell began at the first
	step(50 * time.Millisecond)
	r.assigned(nil, nil, nil) // 150 ms
	r.assigned(nil, nil, nil) // assigned again without a loss: nothing
	if got := r.spent(); got != 450*time.Millisecond {
		t.Fatalf("spent %v, want 450ms", got)
	}
}
