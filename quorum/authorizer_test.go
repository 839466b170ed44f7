package quorum

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func allow(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, name, principal, host string, op kmsg.ACLOperation) ACLBinding {
	return ACLBinding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

func deny(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, name, principal, host string, op kmsg.ACLOperation) ACLBinding {
	b := allow(rt, pt, name, principal, host, op)
	b.Permission = kmsg.ACLPermissionTypeDeny
	return b
}

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	lit     = kmsg.ACLResourcePatternTypeLiteral
	pre     = kmsg.ACLResourcePatternTypePrefixed
	opRead  = kmsg.ACLOperationRead
	opWrite = kmsg.ACLOperationWrite
	opDesc  = kmsg.ACLOperationDescribe
)

func TestAuthorize(t *testing.T) {
	a := &Authorizer{SuperUsers: []string{"User:admin"}}
	for _, tc := range []struct {
		name      string
		acls      []ACLBinding
		everyone  bool
		principal string
		host      string
		op        kmsg.ACLOperation
		rt        kmsg.ACLResourceType
		res       string
		want      bool
	}{
		{name: "no acls, default deny", principal: "User:alice", op: opRead, rt: topic, res: "t", want: false},
		{name: "no acls, allow everyone", everyone: true, principal: "User:alice", op: opRead, rt: topic, res: "t", want: true},
		{name: "super user", acls: []ACLBinding{deny(topic, lit, "t", "User:admin", "*", kmsg.ACLOperationAll)}, principal: "User:admin", op: opRead, rt: topic, res: "t", want: true},
		{name: "literal allow", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", opRead)}, principal: "User:alice", op: opRead, rt: topic, res: "t", want: true},
		{name: "literal other name", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", opRead)}, principal: "User:alice", op: opRead, rt: topic, res: "t2", want: false},
		{name: "acl on resource for other principal beats allow everyone", everyone: true, acls: []ACLBinding{allow(topic, lit, "t", "User:bob", "*", opRead)}, principal: "User:alice", op: opRead, rt: topic, res: "t", want: false},
		{name: "acl on other resource leaves allow everyone", everyone: true, acls: []ACLBinding{allow(topic, lit, "u", "User:bob", "*", opRead)}, principal: "User:alice", op: opRead, rt: topic, res: "t", want: true},
		{name: "wrong resource type", acls: []ACLBinding{allow(group, lit, "t", "User:alice", "*", opRead)}, principal: "User:alice", op: opRead, rt: topic, res: "t", want: false},
		{name: "prefixed", acls: []ACLBinding{allow(topic, pre, "a-", "User:alice", "*", opRead)}, principal: "User:alice", op: opRead, rt: topic, res: "a-x", want: true},
		{name: "prefixed miss", acls: []ACLBinding{allow(topic, pre, "a-", "User:alice", "*", opRead)}, principal: "User:alice", op: opRead, rt: topic, res: "b-x", want: false},
		{name: "prefix is not a wildcard", acls: []ACLBinding{allow(topic, pre, "*", "User:alice", "*", opRead)}, principal: "User:alice", op: opRead, rt: topic, res: "t", want: false},
		{name: "wildcard resource", acls: []ACLBinding{allow(topic, lit, "*", "User:alice", "*", opRead)}, principal: "User:alice", op: opRead, rt: topic, res: "t", want: true},
		{name: "wildcard principal", acls: []ACLBinding{allow(topic, lit, "t", "User:*", "*", opRead)}, principal: "User:alice", op: opRead, rt: topic, res: "t", want: true},
		{name: "host match", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "10.0.0.1", opRead)}, principal: "User:alice", host: "10.0.0.1", op: opRead, rt: topic, res: "t", want: true},
		{name: "host miss", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "10.0.0.1", opRead)}, principal: "User:alice", host: "10.0.0.2", op: opRead, rt: topic, res: "t", want: false},
		{name: "deny beats allow", acls: []ACLBinding{allow(topic, pre, "a-", "User:alice", "*", opRead), deny(topic, lit, "a-x", "User:alice", "*", opRead)}, principal: "User:alice", op: opRead, rt: topic, res: "a-x", want: false},
		{name: "deny wildcard principal beats allow", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", opRead), deny(topic, lit, "t", "User:*", "*", opRead)}, principal: "User:alice", op: opRead, rt: topic, res: "t", want: false},
		{name: "deny other host leaves allow", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", opRead), deny(topic, lit, "t", "User:alice", "10.9.9.9", opRead)}, principal: "User:alice", host: "10.0.0.1", op: opRead, rt: topic, res: "t", want: true},
		{name: "deny all", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", opRead), deny(topic, lit, "t", "User:alice", "*", kmsg.ACLOperationAll)}, principal: "User:alice", op: opRead, rt: topic, res: "t", want: false},
		{name: "deny read keeps describe", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", opDesc), deny(topic, lit, "t", "User:alice", "*", opRead)}, principal: "User:alice", op: opDesc, rt: topic, res: "t", want: true},
		{name: "allow all", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", kmsg.ACLOperationAll)}, principal: "User:alice", op: kmsg.ACLOperationDelete, rt: topic, res: "t", want: true},
		{name: "read implies describe", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", opRead)}, principal: "User:alice", op: opDesc, rt: topic, res: "t", want: true},
		{name: "write implies describe", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", opWrite)}, principal: "User:alice", op: opDesc, rt: topic, res: "t", want: true},
		{name: "delete implies describe", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", kmsg.ACLOperationDelete)}, principal: "User:alice", op: opDesc, rt: topic, res: "t", want: true},
		{name: "alter implies describe", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", kmsg.ACLOperationAlter)}, principal: "User:alice", op: opDesc, rt: topic, res: "t", want: true},
		{name: "create does not imply describe", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", kmsg.ACLOperationCreate)}, principal: "User:alice", op: opDesc, rt: topic, res: "t", want: false},
		{name: "describe does not imply read", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", opDesc)}, principal: "User:alice", op: opRead, rt: topic, res: "t", want: false},
		{name: "alter configs implies describe configs", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", kmsg.ACLOperationAlterConfigs)}, principal: "User:alice", op: kmsg.ACLOperationDescribeConfigs, rt: topic, res: "t", want: true},
		{name: "describe configs does not imply alter configs", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", kmsg.ACLOperationDescribeConfigs)}, principal: "User:alice", op: kmsg.ACLOperationAlterConfigs, rt: topic, res: "t", want: false},
		{name: "deny read does not deny describe implied by write", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", opWrite), deny(topic, lit, "t", "User:alice", "*", opRead)}, principal: "User:alice", op: opDesc, rt: topic, res: "t", want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := *a
			a.AllowEveryoneIfNoACL = tc.everyone
			host := tc.host
			if host == "" {
				host = "127.0.0.1"
			}
			if got := a.Authorize(NewACLSet(tc.acls...), tc.principal, host, tc.op, tc.rt, tc.res); got != tc.want {
				t.Fatalf("Authorize = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAuthorizeAny(t *testing.T) {
	a := &Authorizer{SuperUsers: []string{"User:admin"}}
	for _, tc := range []struct {
		name string
		acls []ACLBinding
		want bool
	}{
		{name: "none", want: false},
		{name: "write on one topic", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", opWrite)}, want: true},
		{name: "write on a prefix", acls: []ACLBinding{allow(topic, pre, "a-", "User:alice", "*", opWrite)}, want: true},
		{name: "read only", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", opRead)}, want: false},
		{name: "denied on that topic", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", opWrite), deny(topic, lit, "t", "User:alice", "*", opWrite)}, want: false},
		{name: "denied by prefix", acls: []ACLBinding{allow(topic, lit, "a-x", "User:alice", "*", opWrite), deny(topic, pre, "a-", "User:alice", "*", opWrite)}, want: false},
		{name: "denied on wildcard", acls: []ACLBinding{allow(topic, lit, "t", "User:alice", "*", opWrite), deny(topic, lit, "*", "User:*", "*", opWrite)}, want: false},
		{name: "other principal", acls: []ACLBinding{allow(topic, lit, "t", "User:bob", "*", opWrite)}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.AuthorizeAny(NewACLSet(tc.acls...), "User:alice", "127.0.0.1", opWrite, topic); got != tc.want {
				t.Fatalf("AuthorizeAny = %v, want %v", got, tc.want)
			}
		})
	}
	if !a.AuthorizeAny(nil, "User:admin", "h", opWrite, topic) {
		t.Fatal("super user refused")
	}
}

func TestACLFilterMatches(t *testing.T) {
	s := func(v string) *string { return &v }
	b := allow(topic, pre, "a-", "User:alice", "*", opRead)
	w := allow(topic, lit, "*", "User:bob", "*", opWrite)
	anyF := ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	for _, tc := range []struct {
		name string
		f    func(*ACLFilter)
		b    ACLBinding
		want bool
	}{
		{"any", func(*ACLFilter) {}, b, true},
		{"type", func(f *ACLFilter) { f.ResourceType = group }, b, false},
		{"literal filter vs prefixed", func(f *ACLFilter) { f.PatternType = lit }, b, false},
		{"exact name any pattern", func(f *ACLFilter) { f.ResourceName = s("a-") }, b, true},
		{"name any pattern is exact", func(f *ACLFilter) { f.ResourceName = s("a-x") }, b, false},
		{"match prefix", func(f *ACLFilter) { f.PatternType = kmsg.ACLResourcePatternTypeMatch; f.ResourceName = s("a-x") }, b, true},
		{"match wildcard", func(f *ACLFilter) { f.PatternType = kmsg.ACLResourcePatternTypeMatch; f.ResourceName = s("zz") }, w, true},
		{"match miss", func(f *ACLFilter) { f.PatternType = kmsg.ACLResourcePatternTypeMatch; f.ResourceName = s("b-x") }, b, false},
		{"principal", func(f *ACLFilter) { f.Principal = s("User:bob") }, b, false},
		{"host", func(f *ACLFilter) { f.Host = s("*") }, b, true},
		{"operation", func(f *ACLFilter) { f.Operation = opWrite }, b, false},
		{"permission", func(f *ACLFilter) { f.Permission = kmsg.ACLPermissionTypeDeny }, b, false},
	} {
		f := anyF
		tc.f(&f)
		if got := f.Matches(tc.b); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestACLPlanReplay(t *testing.T) {
	im := NewImage()
	apply := func(cmd Command) any {
		t.Helper()
		recs, reply, err := Plan(im, Policy{}, cmd)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := im.Replay(r); err != nil {
				t.Fatal(err)
			}
		}
		return reply
	}
	good := allow(topic, pre, "a-", "User:alice", "*", opRead)
	bad := good
	bad.PatternType = kmsg.ACLResourcePatternTypeMatch
	cluster := allow(kmsg.ACLResourceTypeCluster, lit, "other", "User:alice", "*", kmsg.ACLOperationAlter)
	noColon := good
	noColon.Principal = "alice"
	r := apply(&CreateACLs{Bindings: []ACLBinding{good, bad, good, cluster, noColon}}).(*CreateACLsReply)
	codes := []int16{0, 42, 0, 42, 42} // INVALID_REQUEST
	for i, res := range r.Results {
		if res.Code != codes[i] {
			t.Errorf("binding %d: code %d (%s), want %d", i, res.Code, res.Message, codes[i])
		}
	}
	if len(im.ACLs) != 1 || im.ACLSet().Len() != 1 {
		t.Fatalf("ACLs %v, want the one good binding once", im.ACLs)
	}
	apply(&CreateACLs{Bindings: []ACLBinding{good}})
	if len(im.ACLs) != 1 {
		t.Fatalf("existing binding created again: %v", im.ACLs)
	}
	a := &Authorizer{}
	if !a.Authorize(im.ACLSet(), "User:alice", "h", opRead, topic, "a-x") {
		t.Fatal("replayed ACL not in effect")
	}
	name := "a-x"
	d := apply(&DeleteACLs{Filters: []ACLFilter{{ResourceType: topic, ResourceName: &name, PatternType: kmsg.ACLResourcePatternTypeMatch, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}}}).(*DeleteACLsReply)
	if len(d.Results) != 1 || len(d.Results[0].Deleted) != 1 || d.Results[0].Deleted[0] != good {
		t.Fatalf("delete reply %+v", d)
	}
	if len(im.ACLs) != 0 || a.Authorize(im.ACLSet(), "User:alice", "h", opRead, topic, "a-x") {
		t.Fatal("deleted ACL still in effect")
	}
}

// TestACLSnapshotRoundTrip: the ACLs survive a snapshot (written and
// read back) and the authorizer's index is rebuilt from them; a record
// survives its log encoding.
func TestACLSnapshotRoundTrip(t *testing.T) {
	im := NewImage()
	b := allow(topic, pre, "a-", "User:alice", "*", opRead)
	if err := im.Replay(&ACLRecord{ID: NewUUID().String(), ACLBinding: b}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, im, 7); err != nil {
		t.Fatal(err)
	}
	back, _, err := ReadSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.ACLs) != 1 || !(&Authorizer{}).Authorize(back.ACLSet(), "User:alice", "h", opRead, topic, "a-b") {
		t.Fatalf("after a snapshot: %+v", back.ACLs)
	}
	for id, got := range back.ACLs {
		if got != b || im.ACLs[id] != b {
			t.Fatalf("binding %+v came back as %+v", b, got)
		}
	}
}

// BenchmarkAuthorize: one decision among n ACLs on topics (linear in
// the ACLs of the resource type).
func BenchmarkAuthorize(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			var bs []ACLBinding
			for i := range n {
				bs = append(bs, allow(topic, lit, "t-"+strconv.Itoa(i), "User:u"+strconv.Itoa(i%50), "*", opRead))
			}
			s, a := NewACLSet(bs...), &Authorizer{}
			b.ReportAllocs()
			for b.Loop() {
				if !a.Authorize(s, "User:u7", "10.0.0.1", opRead, topic, "t-7") {
					b.Fatal("refused")
				}
			}
		})
	}
}
