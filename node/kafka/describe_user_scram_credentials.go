package kafka

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeUserScramCredentials (key 50), version 0; served when the
// Broker implements ScramAdmin (KIP-554).
//
// Null or empty Users describes every user with a credential, sorted;
// otherwise each named user in order: RESOURCE_NOT_FOUND for one without
// credentials, DUPLICATE_RESOURCE for one named twice. Each credential is
// its mechanism and iteration count: never a salt or a key.
func handleDescribeUserSCRAMCredentials(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	users, err := s.broker.(ScramAdmin).ScramUsers(ctx)
	if err != nil {
		return nil, fmt.Errorf("broker describe SCRAM credentials: %w", err)
	}
	var names []string
	if len(req.Users) == 0 {
		for u := range users {
			names = append(names, u)
		}
		sort.Strings(names)
	} else {
		for _, u := range req.Users {
			names = append(names, u.Name)
		}
	}
	for i, name := range names {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = name
		byMech, ok := users[name]
		switch {
		case slices.Contains(names[:i], name) || slices.Contains(names[i+1:], name):
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + name)
		case !ok || len(byMech) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + name)
		default:
			mechs := make([]string, 0, len(byMech))
			for m := range byMech {
				mechs = append(mechs, m)
			}
			sort.Strings(mechs)
			for _, m := range mechs {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = scramMechanismType(m), byMech[m]
				res.CredentialInfos = append(res.CredentialInfos, ci)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
