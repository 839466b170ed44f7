package quorum

import (
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACLSet is an immutable set of ACL bindings indexed by resource type:
// the data of Kafka's StandardAuthorizer. The image rebuilds it on
// every ACL record, so a reader holds a consistent set without a lock.
type ACLSet struct {
	byType map[kmsg.ACLResourceType]*aclIndex
	n      int
}

// aclIndex holds the bindings of one resource type: all of them, and
// by pattern name, so that a decision looks up the literal name, the
// wildcard and each prefix of the name instead of scanning.
type aclIndex struct {
	all      []ACLBinding
	literal  map[string][]ACLBinding
	prefixed map[string][]ACLBinding
}

func newACLSet(m map[string]ACLBinding) *ACLSet {
	if len(m) == 0 {
		return nil
	}
	s := &ACLSet{byType: map[kmsg.ACLResourceType]*aclIndex{}, n: len(m)}
	for _, b := range m {
		ix := s.byType[b.ResourceType]
		if ix == nil {
			ix = &aclIndex{literal: map[string][]ACLBinding{}, prefixed: map[string][]ACLBinding{}}
			s.byType[b.ResourceType] = ix
		}
		ix.all = append(ix.all, b)
		if b.PatternType == kmsg.ACLResourcePatternTypePrefixed {
			ix.prefixed[b.ResourceName] = append(ix.prefixed[b.ResourceName], b)
		} else {
			ix.literal[b.ResourceName] = append(ix.literal[b.ResourceName], b)
		}
	}
	return s
}

// applying calls fn with each binding whose pattern covers name (the
// literal name, the wildcard, every prefix of the name), until fn
// returns false.
func (s *ACLSet) applying(rt kmsg.ACLResourceType, name string, fn func(ACLBinding) bool) {
	if s == nil {
		return
	}
	ix := s.byType[rt]
	if ix == nil {
		return
	}
	each := func(bs []ACLBinding) bool {
		for _, b := range bs {
			if !fn(b) {
				return false
			}
		}
		return true
	}
	if !each(ix.literal[name]) || name != ACLWildcard && !each(ix.literal[ACLWildcard]) {
		return
	}
	if len(ix.prefixed) == 0 {
		return
	}
	for i := 1; i <= len(name); i++ {
		if !each(ix.prefixed[name[:i]]) {
			return
		}
	}
}

// NewACLSet returns a set of the given bindings (tests, tools).
func NewACLSet(bs ...ACLBinding) *ACLSet {
	m := make(map[string]ACLBinding, len(bs))
	for i, b := range bs {
		m[strconv.Itoa(i)] = b
	}
	return newACLSet(m)
}

// of returns the bindings of resource type rt.
func (s *ACLSet) of(rt kmsg.ACLResourceType) []ACLBinding {
	if s == nil || s.byType[rt] == nil {
		return nil
	}
	return s.byType[rt].all
}

// Len is the number of bindings.
func (s *ACLSet) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Bindings returns the bindings that pass f, in a stable order.
func (s *ACLSet) Bindings(f *ACLFilter) []ACLBinding {
	var out []ACLBinding
	if s == nil {
		return nil
	}
	for _, ix := range s.byType {
		for _, b := range ix.all {
			if f.Matches(b) {
				out = append(out, b)
			}
		}
	}
	slices.SortFunc(out, func(x, y ACLBinding) int { return strings.Compare(x.String(), y.String()) })
	return out
}

// Authorizer decides as Kafka's StandardAuthorizer: super users may do
// everything; otherwise, among the ACLs whose pattern applies to the
// resource (literal name, literal "*", or a prefix of the name), a
// matching DENY refuses, else a matching ALLOW permits, else the
// answer is AllowEveryoneIfNoACL if no ACL applies to the resource at
// all, and a refusal if some do (for other principals, hosts or
// operations). An ACL matches a request when its principal is the
// request's or "User:*", its host the request's or "*", and its
// operation the requested one or ALL; an ALLOW of READ, WRITE, DELETE
// or ALTER also allows DESCRIBE, and one of ALTER_CONFIGS allows
// DESCRIBE_CONFIGS. Read-only once in use: safe for concurrent calls.
type Authorizer struct {
	// SuperUsers are super.users principals ("User:admin").
	SuperUsers []string
	// AllowEveryoneIfNoACL is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACL bool
}

// Authorize reports whether principal, connected from host, may do op
// on the resource of type rt named name under the ACLs of s.
func (a *Authorizer) Authorize(s *ACLSet, principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if slices.Contains(a.SuperUsers, principal) {
		return true
	}
	found, allow, deny := false, false, false
	s.applying(rt, name, func(b ACLBinding) bool {
		found = true
		if !entryMatches(b, principal, host) {
			return true
		}
		if b.Permission == kmsg.ACLPermissionTypeDeny {
			deny = b.Operation == kmsg.ACLOperationAll || b.Operation == op
			return !deny
		}
		allow = allow || allowImplies(b.Operation, op)
		return true
	})
	switch {
	case deny:
		return false
	case allow:
		return true
	}
	return !found && a.AllowEveryoneIfNoACL
}

// AuthorizeAny reports whether principal from host may do op on some
// resource of type rt, as Kafka's authorizeByResourceType (KIP-679:
// InitProducerId for idempotence is allowed with WRITE on any topic): a
// super user may; a DENY of op on the wildcard literal refuses; an ALLOW
// of op on some pattern permits unless a DENY covers that pattern (the
// same literal, or a prefix of its name). With no ACL of type rt at all
// it answers AllowEveryoneIfNoACL.
func (a *Authorizer) AuthorizeAny(s *ACLSet, principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if slices.Contains(a.SuperUsers, principal) {
		return true
	}
	bs := s.of(rt)
	var denies, allows []ACLBinding
	for _, b := range bs {
		if !entryMatches(b, principal, host) {
			continue
		}
		switch {
		case b.Permission == kmsg.ACLPermissionTypeDeny && (b.Operation == op || b.Operation == kmsg.ACLOperationAll):
			if b.PatternType == kmsg.ACLResourcePatternTypeLiteral && b.ResourceName == ACLWildcard {
				return false
			}
			denies = append(denies, b)
		case b.Permission == kmsg.ACLPermissionTypeAllow && allowImplies(b.Operation, op):
			allows = append(allows, b)
		}
	}
	for _, al := range allows {
		covered := slices.ContainsFunc(denies, func(d ACLBinding) bool {
			if d.PatternType == kmsg.ACLResourcePatternTypePrefixed {
				return strings.HasPrefix(al.ResourceName, d.ResourceName)
			}
			return al.PatternType == kmsg.ACLResourcePatternTypeLiteral && d.ResourceName == al.ResourceName
		})
		if !covered {
			return true
		}
	}
	return len(bs) == 0 && a.AllowEveryoneIfNoACL
}

// entryMatches reports whether b's principal and host cover the request's.
func entryMatches(b ACLBinding, principal, host string) bool {
	if b.Principal != principal && b.Principal != "User:"+ACLWildcard {
		return false
	}
	return b.Host == host || b.Host == ACLWildcard
}

// allowImplies reports whether an ALLOW of have permits op.
func allowImplies(have, op kmsg.ACLOperation) bool {
	switch {
	case have == op, have == kmsg.ACLOperationAll:
		return true
	case op == kmsg.ACLOperationDescribe:
		switch have {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case op == kmsg.ACLOperationDescribeConfigs:
		return have == kmsg.ACLOperationAlterConfigs
	}
	return false
}
