package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorizer decides whether a principal may do an operation on a
// resource (Kafka's Authorizer; the node's is the StandardAuthorizer
// over the metadata image's ACLs, quorum.Authorizer). Options.Authorizer
// nil: every request is allowed (authorizer.class.name empty).
// Called from connection goroutines concurrently.
type Authorizer interface {
	// Authorize reports whether principal ("User:alice"), connected
	// from host (an IP address), may do op on the resource of type rt
	// named name.
	Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool
	// AuthorizeAny reports whether principal from host may do op on
	// some resource of type rt (Kafka's authorizeByResourceType).
	AuthorizeAny(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool
}

// AnonymousPrincipal is the principal of a connection that did not
// authenticate: PLAINTEXT, or SSL without a client certificate.
const AnonymousPrincipal = "User:ANONYMOUS"

// clusterName is the name of the CLUSTER resource.
const clusterName = "kafka-cluster"

// AuthzStats counts the authorizer's decisions (Kafka's
// authorizer-metrics: authorization-allowed and authorization-denied).
type AuthzStats struct {
	Allowed, Denied int64
}

// AuthzStats returns the decisions counted so far.
func (s *Server) AuthzStats() AuthzStats {
	return AuthzStats{Allowed: s.authz.allowed.Load(), Denied: s.authz.denied.Load()}
}

// Authorizing reports whether requests are authorized (an Authorizer
// is set): the group handlers use it to skip work.
func (s *Server) Authorizing() bool { return s.opts.Authorizer != nil }

// allowed reports whether the principal of r may do op on the resource
// rt/name, counts the decision, and logs a denial (Kafka's
// kafka.authorizer.logger line: principal, operation, host, resource).
// Handlers of every API call it for the checks of Kafka's
// authorization table (KafkaApis); the group APIs' checks are in
// authorizeAPI, or in their handlers for the ones that name many
// groups or topics (see doc.go).
func (s *Server) allowed(r *request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return s.decide(r, op, rt, name, true)
}

// visible is allowed without the log line, for resources a request
// did not name (Metadata for all topics, ListGroups): Kafka filters
// those out quietly.
func (s *Server) visible(r *request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return s.decide(r, op, rt, name, false)
}

func (s *Server) decide(r *request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string, logDenied bool) bool {
	a := s.opts.Authorizer
	if a == nil {
		return true
	}
	ok := a.Authorize(r.principal, r.host, op, rt, name)
	s.countAuthz(r, ok, logDenied, op, rt, name)
	return ok
}

// allowedAny is allowed for some resource of type rt.
func (s *Server) allowedAny(r *request, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	a := s.opts.Authorizer
	if a == nil {
		return true
	}
	ok := a.AuthorizeAny(r.principal, r.host, op, rt)
	s.countAuthz(r, ok, true, op, rt, "*")
	return ok
}

func (s *Server) countAuthz(r *request, ok, logDenied bool, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) {
	if ok {
		s.authz.allowed.Add(1)
		return
	}
	s.authz.denied.Add(1)
	if logDenied {
		s.opts.Logger.Info("kafka: authorization denied", "principal", r.principal, "host", r.host,
			"operation", op.String(), "resource_type", rt.String(), "resource", name,
			"api", kmsg.NameForKey(r.key), "listener", r.listener)
	}
}

// clusterAllowed is allowed for op on the cluster.
func (s *Server) clusterAllowed(r *request, op kmsg.ACLOperation) bool {
	return s.allowed(r, op, kmsg.ACLResourceTypeCluster, clusterName)
}

// authorizeAPI is the authorization hook of the dispatch: every
// authenticated request passes it before its handler. For the APIs whose
// whole request needs one permission it checks it, and answers a refused
// request with the API's authorization error here (the handler is not
// called); every other request (nil) goes on to its handler, which
// checks its resources itself.
func (s *Server) authorizeAPI(r *request) kmsg.Response {
	if s.opts.Authorizer == nil || r.body == nil {
		return nil
	}
	clusterDenied := kerr.ClusterAuthorizationFailed.Code
	groupDenied := kerr.GroupAuthorizationFailed.Code
	switch req := r.body.(type) {
	case *kmsg.DescribeClusterRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationDescribe) {
			resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
			resp.ErrorCode = clusterDenied
			return resp
		}
	case *kmsg.DescribeQuorumRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationDescribe) {
			resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
			resp.ErrorCode = clusterDenied
			return resp
		}
	case *kmsg.ElectLeadersRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationAlter) {
			resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
			resp.ErrorCode = clusterDenied
			for _, t := range req.Topics {
				rt := kmsg.NewElectLeadersResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewElectLeadersResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, clusterDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationAlter) {
			resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
			resp.ErrorCode = clusterDenied
			resp.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
			return resp
		}
	case *kmsg.UnregisterBrokerRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationAlter) {
			resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
			resp.ErrorCode = clusterDenied
			resp.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
			return resp
		}
	case *kmsg.AddRaftVoterRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationAlter) {
			resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
			resp.ErrorCode = clusterDenied
			resp.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
			return resp
		}
	case *kmsg.RemoveRaftVoterRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationAlter) {
			resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
			resp.ErrorCode = clusterDenied
			resp.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
			return resp
		}
	case *kmsg.ListPartitionReassignmentsRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationDescribe) {
			resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
			resp.ErrorCode = clusterDenied
			resp.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
			return resp
		}
	case *kmsg.DescribeClientQuotasRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationDescribeConfigs) {
			resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
			resp.ErrorCode = clusterDenied
			resp.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
			return resp
		}
	case *kmsg.AlterClientQuotasRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationAlterConfigs) {
			resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
			for _, e := range req.Entries {
				re := kmsg.NewAlterClientQuotasResponseEntry()
				re.ErrorCode = clusterDenied
				for _, p := range e.Entity {
					re.Entity = append(re.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
				}
				resp.Entries = append(resp.Entries, re)
			}
			return resp
		}
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationDescribe) {
			resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
			resp.ErrorCode = clusterDenied
			return resp
		}
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationAlter) {
			resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
			seen := map[string]bool{}
			add := func(user string) {
				if !seen[user] {
					seen[user] = true
					rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
					rr.User, rr.ErrorCode = user, clusterDenied
					resp.Results = append(resp.Results, rr)
				}
			}
			for _, d := range req.Deletions {
				add(d.Name)
			}
			for _, u := range req.Upsertions {
				add(u.Name)
			}
			return resp
		}
	case *kmsg.DescribeACLsRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationDescribe) {
			resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
			resp.ErrorCode = clusterDenied
			resp.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
			return resp
		}
	case *kmsg.CreateACLsRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationAlter) {
			resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
			for range req.Creations {
				rr := kmsg.NewCreateACLsResponseResult()
				rr.ErrorCode = clusterDenied
				resp.Results = append(resp.Results, rr)
			}
			return resp
		}
	case *kmsg.DeleteACLsRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationAlter) {
			resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
			for range req.Filters {
				rr := kmsg.NewDeleteACLsResponseResult()
				rr.ErrorCode = clusterDenied
				resp.Results = append(resp.Results, rr)
			}
			return resp
		}
	case *kmsg.UpdateFeaturesRequest:
		if !s.clusterAllowed(r, kmsg.ACLOperationAlter) {
			return updateFeaturesDenied(req)
		}
	case *kmsg.WriteTxnMarkersRequest:
		// Brokers only (the transaction coordinator's markers).
		if !s.clusterAllowed(r, kmsg.ACLOperationClusterAction) {
			resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
			for _, m := range req.Markers {
				rm := kmsg.NewWriteTxnMarkersResponseMarker()
				rm.ProducerID = m.ProducerID
				for _, t := range m.Topics {
					rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
						rp.Partition, rp.ErrorCode = p, clusterDenied
						rt.Partitions = append(rt.Partitions, rp)
					}
					rm.Topics = append(rm.Topics, rt)
				}
				resp.Markers = append(resp.Markers, rm)
			}
			return resp
		}
	// The group APIs that name one group (Kafka: READ on the group).
	case *kmsg.JoinGroupRequest:
		if !s.allowed(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
			resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
			resp.ErrorCode, resp.Generation, resp.MemberID = groupDenied, -1, req.MemberID
			return resp
		}
	case *kmsg.SyncGroupRequest:
		if !s.allowed(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
			resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
			resp.ErrorCode = groupDenied
			return resp
		}
	case *kmsg.HeartbeatRequest:
		if !s.allowed(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
			resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
			resp.ErrorCode = groupDenied
			return resp
		}
	case *kmsg.LeaveGroupRequest:
		if !s.allowed(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
			resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
			resp.ErrorCode = groupDenied
			return resp
		}
	case *kmsg.OffsetCommitRequest:
		if !s.allowed(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
			resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
			for _, t := range req.Topics {
				rt := kmsg.NewOffsetCommitResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, groupDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}
	case *kmsg.OffsetDeleteRequest:
		if !s.allowed(r, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeGroup, req.Group) {
			resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
			resp.ErrorCode = groupDenied
			return resp
		}
	}
	return nil
}
