package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// aclsCmd is `sluice acls`, after kafka-acls.sh: one of --add, --remove
// or --list, the resources (--topic, --group, --cluster,
// --transactional-id, with --resource-pattern-type), and for --add and
// --remove the entries: every combination of the allowed principals and
// hosts (default *) with the operations is an ALLOW binding, and the
// same for the denied ones (CreateAcls, DeleteAcls, DescribeAcls).
type aclsCmd struct {
	common
	aclSpec
	add, remove, list bool
}

// aclSpec are the flags that say which bindings or filters a command
// means; aclSpec.bindings and aclSpec.filters turn them into requests.
type aclSpec struct {
	allowPrincipals, denyPrincipals []string
	allowHosts, denyHosts           []string
	operations                      []string
	topics, groups, txnIDs          []string
	cluster                         bool
	patternType                     string
	principal                       string // --list --principal
}

// NewACLsCommand returns `sluice acls`.
func NewACLsCommand() *cobra.Command {
	var c aclsCmd
	cmd := &cobra.Command{
		Use:   "acls",
		Short: "Add, remove and list ACLs, as kafka-acls.sh (Kafka admin API)",
		Example: "  sluice acls --add --allow-principal User:alice --operation Read --topic a- --resource-pattern-type prefixed\n" +
			"  sluice acls --add --deny-principal User:bob --deny-host 10.0.0.7 --operation All --topic orders\n" +
			"  sluice acls --add --allow-principal User:alice --operation Read --group billing\n" +
			"  sluice acls --add --allow-principal User:alice --operation Write --transactional-id etl- --resource-pattern-type prefixed\n" +
			"  sluice acls --list --topic orders\n" +
			"  sluice acls --list --principal User:alice --format json\n" +
			"  sluice acls --remove --allow-principal User:alice --operation Read --topic a- --resource-pattern-type prefixed",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	c.register(cmd)
	f := cmd.Flags()
	f.BoolVar(&c.add, "add", false, "create the ACLs")
	f.BoolVar(&c.remove, "remove", false, "delete the ACLs (all on the resources when no principal or operation is given)")
	f.BoolVar(&c.list, "list", false, "list the ACLs (of the resources given, else all)")
	f.StringArrayVar(&c.allowPrincipals, "allow-principal", nil, "principal to allow (User:alice; User:* for everyone), repeatable")
	f.StringArrayVar(&c.denyPrincipals, "deny-principal", nil, "principal to deny, repeatable")
	f.StringArrayVar(&c.allowHosts, "allow-host", nil, "host (IP address) the allowed principals may connect from (default *)")
	f.StringArrayVar(&c.denyHosts, "deny-host", nil, "host the denied principals are denied from (default *)")
	f.StringArrayVar(&c.operations, "operation", nil, "Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite or All, repeatable")
	f.StringArrayVar(&c.topics, "topic", nil, "topic (or prefix, or * for every topic), repeatable")
	f.StringArrayVar(&c.groups, "group", nil, "consumer group (or prefix, or *), repeatable")
	f.StringArrayVar(&c.txnIDs, "transactional-id", nil, "transactional id (or prefix, or *), repeatable")
	f.BoolVar(&c.cluster, "cluster", false, "the cluster resource")
	f.StringVar(&c.patternType, "resource-pattern-type", "literal", "literal or prefixed; for --list and --remove also any or match")
	f.StringVar(&c.principal, "principal", "", "--list only the ACLs of this principal")
	return cmd
}

// aclResource is one resource pattern of the command.
type aclResource struct {
	typ  kmsg.ACLResourceType
	name string
}

func (s *aclSpec) resources() []aclResource {
	var out []aclResource
	for _, t := range s.topics {
		out = append(out, aclResource{kmsg.ACLResourceTypeTopic, t})
	}
	for _, g := range s.groups {
		out = append(out, aclResource{kmsg.ACLResourceTypeGroup, g})
	}
	for _, x := range s.txnIDs {
		out = append(out, aclResource{kmsg.ACLResourceTypeTransactionalId, x})
	}
	if s.cluster {
		out = append(out, aclResource{kmsg.ACLResourceTypeCluster, "kafka-cluster"})
	}
	return out
}

func (s *aclSpec) pattern(forFilter bool) (kmsg.ACLResourcePatternType, error) {
	p, err := kmsg.ParseACLResourcePatternType(s.patternType)
	ok := err == nil && (p == kmsg.ACLResourcePatternTypeLiteral || p == kmsg.ACLResourcePatternTypePrefixed ||
		forFilter && (p == kmsg.ACLResourcePatternTypeAny || p == kmsg.ACLResourcePatternTypeMatch))
	if !ok {
		want := "literal or prefixed"
		if forFilter {
			want = "literal, prefixed, any or match"
		}
		return 0, fmt.Errorf("--resource-pattern-type %q: want %s", s.patternType, want)
	}
	return p, nil
}

func (s *aclSpec) ops() ([]kmsg.ACLOperation, error) {
	var out []kmsg.ACLOperation
	for _, o := range s.operations {
		op, err := kmsg.ParseACLOperation(o)
		if err != nil || op <= kmsg.ACLOperationAny || op > kmsg.ACLOperationIdempotentWrite {
			return nil, fmt.Errorf("--operation %q: want Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite or All", o)
		}
		if !slices.Contains(out, op) {
			out = append(out, op)
		}
	}
	return out, nil
}

func checkPrincipals(flag string, ps []string) error {
	for _, p := range ps {
		if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
			return fmt.Errorf("%s %q: want Type:name (User:alice, User:*)", flag, p)
		}
	}
	return nil
}

// entries are the (principal, host, permission) combinations of --add
// and --remove.
type aclEntry struct {
	principal, host string
	permission      kmsg.ACLPermissionType
}

func (s *aclSpec) entries() ([]aclEntry, error) {
	if err := checkPrincipals("--allow-principal", s.allowPrincipals); err != nil {
		return nil, err
	}
	if err := checkPrincipals("--deny-principal", s.denyPrincipals); err != nil {
		return nil, err
	}
	if len(s.allowHosts) > 0 && len(s.allowPrincipals) == 0 {
		return nil, errors.New("--allow-host needs --allow-principal")
	}
	if len(s.denyHosts) > 0 && len(s.denyPrincipals) == 0 {
		return nil, errors.New("--deny-host needs --deny-principal")
	}
	var out []aclEntry
	add := func(ps, hosts []string, perm kmsg.ACLPermissionType) {
		if len(hosts) == 0 {
			hosts = []string{"*"}
		}
		for _, p := range ps {
			for _, h := range hosts {
				out = append(out, aclEntry{p, h, perm})
			}
		}
	}
	add(s.allowPrincipals, s.allowHosts, kmsg.ACLPermissionTypeAllow)
	add(s.denyPrincipals, s.denyHosts, kmsg.ACLPermissionTypeDeny)
	return out, nil
}

// bindings are the CreateAcls creations of --add: every resource ×
// entry × operation.
func (s *aclSpec) bindings() ([]kmsg.CreateACLsRequestCreation, error) {
	res := s.resources()
	if len(res) == 0 {
		return nil, errors.New("name a resource: --topic, --group, --transactional-id or --cluster")
	}
	pt, err := s.pattern(false)
	if err != nil {
		return nil, err
	}
	es, err := s.entries()
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, errors.New("give --allow-principal or --deny-principal")
	}
	ops, err := s.ops()
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, errors.New("give --operation")
	}
	var out []kmsg.CreateACLsRequestCreation
	for _, r := range res {
		if r.name == "" {
			return nil, errors.New("a resource name must not be empty")
		}
		for _, e := range es {
			for _, op := range ops {
				c := kmsg.NewCreateACLsRequestCreation()
				c.ResourceType, c.ResourceName, c.ResourcePatternType = r.typ, r.name, pt
				c.Principal, c.Host, c.Operation, c.PermissionType = e.principal, e.host, op, e.permission
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// filters are the DeleteAcls filters of --remove: per resource, every
// entry × operation, or the whole resource when neither is given.
func (s *aclSpec) filters() ([]kmsg.DeleteACLsRequestFilter, error) {
	res := s.resources()
	if len(res) == 0 {
		return nil, errors.New("name a resource: --topic, --group, --transactional-id or --cluster")
	}
	pt, err := s.pattern(true)
	if err != nil {
		return nil, err
	}
	es, err := s.entries()
	if err != nil {
		return nil, err
	}
	ops, err := s.ops()
	if err != nil {
		return nil, err
	}
	var out []kmsg.DeleteACLsRequestFilter
	for _, r := range res {
		base := kmsg.NewDeleteACLsRequestFilter()
		base.ResourceType, base.ResourceName, base.ResourcePatternType = r.typ, kmsg.StringPtr(r.name), pt
		base.Operation, base.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		if len(es) == 0 && len(ops) == 0 {
			out = append(out, base)
			continue
		}
		if len(es) == 0 {
			es = []aclEntry{{permission: kmsg.ACLPermissionTypeAny}}
		}
		if len(ops) == 0 {
			ops = []kmsg.ACLOperation{kmsg.ACLOperationAny}
		}
		for _, e := range es {
			for _, op := range ops {
				f := base
				if e.principal != "" {
					f.Principal, f.Host = kmsg.StringPtr(e.principal), kmsg.StringPtr(e.host)
				}
				f.Operation, f.PermissionType = op, e.permission
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// listFilters are the DescribeAcls filters of --list: one per resource
// given, or one for everything.
func (s *aclSpec) listFilters() ([]*kmsg.DescribeACLsRequest, error) {
	pt, err := s.pattern(true)
	if err != nil {
		return nil, err
	}
	if s.principal != "" {
		if err := checkPrincipals("--principal", []string{s.principal}); err != nil {
			return nil, err
		}
	}
	res := s.resources()
	all := len(res) == 0
	if all {
		res = []aclResource{{typ: kmsg.ACLResourceTypeAny}}
		pt = kmsg.ACLResourcePatternTypeAny
	}
	var out []*kmsg.DescribeACLsRequest
	for _, r := range res {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = r.typ, pt
		if !all {
			req.ResourceName = kmsg.StringPtr(r.name)
		}
		if s.principal != "" {
			req.Principal = kmsg.StringPtr(s.principal)
		}
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		out = append(out, req)
	}
	return out, nil
}

// ACL is one binding as `sluice acls --list --format json` prints it.
type ACL struct {
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

func (a ACL) resource() string {
	return fmt.Sprintf("ResourcePattern(resourceType=%s, name=%s, patternType=%s)", a.ResourceType, a.ResourceName, a.PatternType)
}

func (c *aclsCmd) run(ctx context.Context, w io.Writer) error {
	n := 0
	for _, b := range []bool{c.add, c.remove, c.list} {
		if b {
			n++
		}
	}
	if n != 1 {
		return errors.New("give one of --add, --remove or --list")
	}
	switch {
	case c.add:
		cs, err := c.bindings()
		if err != nil {
			return err
		}
		return c.with(ctx, func(s session) error { return c.doAdd(s, w, cs) })
	case c.remove:
		fs, err := c.filters()
		if err != nil {
			return err
		}
		return c.with(ctx, func(s session) error { return c.doRemove(s, w, fs) })
	}
	reqs, err := c.listFilters()
	if err != nil {
		return err
	}
	return c.with(ctx, func(s session) error { return c.doList(s, w, reqs) })
}

func aclOf(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) ACL {
	return ACL{ResourceType: rt.String(), ResourceName: name, PatternType: pt.String(), Principal: principal, Host: host, Operation: op.String(), Permission: perm.String()}
}

func (c *aclsCmd) doAdd(s session, w io.Writer, cs []kmsg.CreateACLsRequestCreation) error {
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = cs
	resp, err := req.RequestWith(s.ctx, s.cl)
	if err != nil {
		return c.unreachable(err)
	}
	var out []ACL
	for i, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("add ACL %d: %v%s", i+1, err, detail(deref(r.ErrorMessage)))
		}
		x := cs[i]
		out = append(out, aclOf(x.ResourceType, x.ResourceName, x.ResourcePatternType, x.Principal, x.Host, x.Operation, x.PermissionType))
	}
	return c.emit(w, out, func() { printACLs(w, "Adding ACLs for resource", out) })
}

func (c *aclsCmd) doRemove(s session, w io.Writer, fs []kmsg.DeleteACLsRequestFilter) error {
	req := kmsg.NewPtrDeleteACLsRequest()
	req.Filters = fs
	resp, err := req.RequestWith(s.ctx, s.cl)
	if err != nil {
		return c.unreachable(err)
	}
	out := []ACL{}
	for i, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("remove ACLs (filter %d): %v%s", i+1, err, detail(deref(r.ErrorMessage)))
		}
		for _, m := range r.MatchingACLs {
			out = append(out, aclOf(m.ResourceType, m.ResourceName, m.ResourcePatternType, m.Principal, m.Host, m.Operation, m.PermissionType))
		}
	}
	return c.emit(w, out, func() {
		if len(out) == 0 {
			fmt.Fprintln(w, "No ACLs matched: nothing removed.")
			return
		}
		printACLs(w, "Removed ACLs for resource", out)
	})
}

func (c *aclsCmd) doList(s session, w io.Writer, reqs []*kmsg.DescribeACLsRequest) error {
	out := []ACL{}
	for _, req := range reqs {
		resp, err := req.RequestWith(s.ctx, s.cl)
		if err != nil {
			return c.unreachable(err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("list ACLs: %v%s", err, detail(deref(resp.ErrorMessage)))
		}
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				out = append(out, aclOf(r.ResourceType, r.ResourceName, r.ResourcePatternType, a.Principal, a.Host, a.Operation, a.PermissionType))
			}
		}
	}
	return c.emit(w, out, func() { printACLs(w, "Current ACLs for resource", out) })
}

// printACLs prints bindings grouped by resource, as kafka-acls.sh does.
func printACLs(w io.Writer, what string, acls []ACL) {
	var order []string
	by := map[string][]ACL{}
	for _, a := range acls {
		k := a.resource()
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], a)
	}
	for _, k := range order {
		fmt.Fprintf(w, "%s `%s`:\n", what, k)
		for _, a := range by[k] {
			fmt.Fprintf(w, " \t(principal=%s, host=%s, operation=%s, permissionType=%s)\n", a.Principal, a.Host, a.Operation, a.Permission)
		}
		fmt.Fprintln(w)
	}
}
