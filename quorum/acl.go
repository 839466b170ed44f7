package quorum

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACLs live in the image as KRaft keeps them: one
// AccessControlEntryRecord per binding (resource type, name, pattern
// type, principal, host, operation, permission) under a UUID, removed
// by id. CreateACLs and DeleteACLs are the controller's side of Kafka's
// CreateAcls and DeleteAcls (AclControlManager); the authorizer's side,
// the decision, is authorizer.go, over the image's ACLSet.

// The commands, by name on the wire.
const (
	CmdCreateACLs CommandType = "create_acls"
	CmdDeleteACLs CommandType = "delete_acls"
)

// The record types; part of the on-disk format.
const (
	TypeACL       RecordType = "access_control_entry"
	TypeRemoveACL RecordType = "remove_access_control_entry"
)

// ClusterResourceName is the name of the one CLUSTER resource.
const ClusterResourceName = "kafka-cluster"

// ACLWildcard is the wildcard resource name, principal ("User:*") name
// and host.
const ACLWildcard = "*"

// ACLBinding is Kafka's AclBinding: a resource pattern and an access
// control entry. In a binding every field is concrete (no ANY or
// MATCH).
type ACLBinding struct {
	ResourceType kmsg.ACLResourceType        `json:"resource_type"`
	ResourceName string                      `json:"resource_name"`
	PatternType  kmsg.ACLResourcePatternType `json:"pattern_type"`
	Principal    string                      `json:"principal"`
	Host         string                      `json:"host"`
	Operation    kmsg.ACLOperation           `json:"operation"`
	Permission   kmsg.ACLPermissionType      `json:"permission"`
}

func (b ACLBinding) String() string {
	return fmt.Sprintf("(pattern=%s:%s:%s, principal=%s, host=%s, operation=%s, permission=%s)",
		b.ResourceType, b.PatternType, b.ResourceName, b.Principal, b.Host, b.Operation, b.Permission)
}

// ACLFilter is Kafka's AclBindingFilter: ANY matches every value of an
// enum, a nil string every string; pattern type MATCH matches the
// patterns that would apply to the named resource (literal, wildcard
// and prefixes of it).
type ACLFilter struct {
	ResourceType kmsg.ACLResourceType        `json:"resource_type"`
	ResourceName *string                     `json:"resource_name,omitempty"`
	PatternType  kmsg.ACLResourcePatternType `json:"pattern_type"`
	Principal    *string                     `json:"principal,omitempty"`
	Host         *string                     `json:"host,omitempty"`
	Operation    kmsg.ACLOperation           `json:"operation"`
	Permission   kmsg.ACLPermissionType      `json:"permission"`
}

// Matches reports whether b passes the filter, as Kafka's
// ResourcePatternFilter.matches and AccessControlEntryFilter.matches.
func (f *ACLFilter) Matches(b ACLBinding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	anyPattern := f.PatternType == kmsg.ACLResourcePatternTypeAny
	if !anyPattern && f.PatternType != kmsg.ACLResourcePatternTypeMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		switch {
		case anyPattern || f.PatternType == b.PatternType:
			if name != b.ResourceName {
				return false
			}
		case b.PatternType == kmsg.ACLResourcePatternTypeLiteral:
			if name != b.ResourceName && b.ResourceName != ACLWildcard {
				return false
			}
		case b.PatternType == kmsg.ACLResourcePatternTypePrefixed:
			if !strings.HasPrefix(name, b.ResourceName) {
				return false
			}
		default:
			return false
		}
	}
	switch {
	case f.Principal != nil && *f.Principal != b.Principal,
		f.Host != nil && *f.Host != b.Host,
		f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation,
		f.Permission != kmsg.ACLPermissionTypeAny && f.Permission != b.Permission:
		return false
	}
	return true
}

// CreateACLs is Kafka's CreateAcls: each binding is created or refused
// on its own; a binding that exists already succeeds without a record.
// Reply: *CreateACLsReply, one result per binding in order.
type CreateACLs struct {
	Bindings []ACLBinding `json:"bindings"`
}

// ACLResult is the outcome of one binding or filter; Code is a Kafka
// error code.
type ACLResult struct {
	Code    int16  `json:"code"`
	Message string `json:"message,omitempty"`
}

// CreateACLsReply is the reply of CreateACLs.
type CreateACLsReply struct {
	Results []ACLResult `json:"results"`
}

// DeleteACLs is Kafka's DeleteAcls: every binding matching any filter
// is removed. Reply: *DeleteACLsReply, one result per filter with the
// bindings it removed (a binding matched by two filters is reported by
// the first).
type DeleteACLs struct {
	Filters []ACLFilter `json:"filters"`
}

// DeleteACLsResult is the outcome of one filter.
type DeleteACLsResult struct {
	ACLResult
	Deleted []ACLBinding `json:"deleted,omitempty"`
}

// DeleteACLsReply is the reply of DeleteACLs.
type DeleteACLsReply struct {
	Results []DeleteACLsResult `json:"results"`
}

func (*CreateACLs) CommandType() CommandType { return CmdCreateACLs }
func (*CreateACLs) newReply() any            { return &CreateACLsReply{} }
func (*DeleteACLs) CommandType() CommandType { return CmdDeleteACLs }
func (*DeleteACLs) newReply() any            { return &DeleteACLsReply{} }

// ACLRecord is KRaft's AccessControlEntryRecord.
type ACLRecord struct {
	ID string `json:"id"`
	ACLBinding
}

// RemoveACLRecord is KRaft's RemoveAccessControlEntryRecord.
type RemoveACLRecord struct {
	ID string `json:"id"`
}

func (*ACLRecord) Type() RecordType       { return TypeACL }
func (*RemoveACLRecord) Type() RecordType { return TypeRemoveACL }

func (r *ACLRecord) String() string {
	return fmt.Sprintf("access-control-entry id=%s %s", r.ID, r.ACLBinding)
}

func (r *RemoveACLRecord) String() string {
	return "remove-access-control-entry id=" + r.ID
}

// ValidateACLBinding checks a binding to be created as Kafka's
// AclControlManager.validateNewAcl does, and its principal as
// SecurityUtils.parseKafkaPrincipal; nil if fine, else an error
// wrapping INVALID_REQUEST.
func ValidateACLBinding(b ACLBinding) error {
	switch {
	case b.ResourceType <= kmsg.ACLResourceTypeAny || b.ResourceType > kmsg.ACLResourceTypeUser:
		return kerrf(kerr.InvalidRequest, "Invalid resourceType %s", b.ResourceType)
	case b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed:
		return kerrf(kerr.InvalidRequest, "Invalid patternType %s", b.PatternType)
	case b.Operation <= kmsg.ACLOperationAny || b.Operation > kmsg.ACLOperationDescribeTokens:
		return kerrf(kerr.InvalidRequest, "Invalid operation %s", b.Operation)
	case b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny:
		return kerrf(kerr.InvalidRequest, "Invalid permissionType %s", b.Permission)
	case b.ResourceName == "":
		return kerrf(kerr.InvalidRequest, "Resource name should not be empty")
	case b.Host == "":
		return kerrf(kerr.InvalidRequest, "Host should not be empty")
	case b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterResourceName:
		return kerrf(kerr.InvalidRequest, "The only valid name for the CLUSTER resource is %s", ClusterResourceName)
	}
	if typ, name, ok := strings.Cut(b.Principal, ":"); !ok || typ == "" || name == "" {
		return kerrf(kerr.InvalidRequest, "Could not parse principal from `%s` (no colon is found separating principal type from principal name)", b.Principal)
	}
	return nil
}

// validFilter checks a DeleteAcls filter: no UNKNOWN anywhere.
func validFilter(f *ACLFilter) error {
	switch {
	case f.ResourceType == kmsg.ACLResourceTypeUnknown,
		f.PatternType == kmsg.ACLResourcePatternTypeUnknown,
		f.Operation == kmsg.ACLOperationUnknown,
		f.Permission == kmsg.ACLPermissionTypeUnknown:
		return kerrf(kerr.InvalidRequest, "Filter contains UNKNOWN elements")
	}
	return nil
}

func (p *planner) createACLs(c *CreateACLs) ([]Record, any, error) {
	newID := p.pol.NewUUID
	if newID == nil {
		newID = NewUUID
	}
	have := map[ACLBinding]bool{}
	for _, b := range p.im.ACLs {
		have[b] = true
	}
	reply := &CreateACLsReply{}
	var recs []Record
	for _, b := range c.Bindings {
		var res ACLResult
		if err := ValidateACLBinding(b); err != nil {
			res.Code, res.Message = ErrorCode(err), err.Error()
		} else if !have[b] {
			have[b] = true
			id := newID().String()
			for p.im.ACLs[id] != (ACLBinding{}) {
				id = newID().String()
			}
			recs = append(recs, &ACLRecord{ID: id, ACLBinding: b})
		}
		reply.Results = append(reply.Results, res)
	}
	return recs, reply, nil
}

func (p *planner) deleteACLs(c *DeleteACLs) ([]Record, any, error) {
	ids := slices.Sorted(maps.Keys(p.im.ACLs))
	gone := map[string]bool{}
	reply := &DeleteACLsReply{}
	var recs []Record
	for i := range c.Filters {
		f := &c.Filters[i]
		var res DeleteACLsResult
		if err := validFilter(f); err != nil {
			res.Code, res.Message = ErrorCode(err), err.Error()
			reply.Results = append(reply.Results, res)
			continue
		}
		for _, id := range ids {
			if b := p.im.ACLs[id]; !gone[id] && f.Matches(b) {
				gone[id] = true
				res.Deleted = append(res.Deleted, b)
				recs = append(recs, &RemoveACLRecord{ID: id})
			}
		}
		reply.Results = append(reply.Results, res)
	}
	return recs, reply, nil
}

// replayACL applies the ACL records (called by Replay). The ACLSet is
// rebuilt, never changed in place: readers keep the one they took.
func (im *Image) replayACL(r Record) error {
	switch r := r.(type) {
	case *ACLRecord:
		if _, ok := im.ACLs[r.ID]; ok || r.ID == "" {
			return stale(r, "ACL id %q exists", r.ID)
		}
		if im.ACLs == nil {
			im.ACLs = map[string]ACLBinding{}
		}
		im.ACLs[r.ID] = r.ACLBinding
	case *RemoveACLRecord:
		if _, ok := im.ACLs[r.ID]; !ok {
			return stale(r, "no ACL with id %q", r.ID)
		}
		delete(im.ACLs, r.ID)
	}
	im.acls = newACLSet(im.ACLs)
	return nil
}

// ACLSet returns the image's ACLs as an immutable set: the caller may
// keep and use it after View returns. Never nil.
func (im *Image) ACLSet() *ACLSet {
	if im.acls == nil {
		return &ACLSet{}
	}
	return im.acls
}
