package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// IncrementalAlterConfigs (key 44), versions 0-1; served when the Broker
// implements Configs.
//
// SET (0) and DELETE (1) operations, applied per resource by
// Configs.AlterConfigs (validate_only honoured). APPEND and SUBTRACT (list
// configs) answer INVALID_REQUEST for their resource, as does a key given
// twice in one resource or a SET with a null value.
// Authorization: ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED)
// or, for a broker, on the cluster (CLUSTER_AUTHORIZATION_FAILED).
func handleIncrementalAlterConfigs(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	var alts []ConfigAlteration
	var idx []int
	errs := make([]error, len(req.Resources))
	msgs := make([]string, len(req.Resources))
	for i, res := range req.Resources {
		a := ConfigAlteration{Type: int8(res.ResourceType), Name: res.ResourceName, Set: map[string]string{}}
		seen := map[string]bool{}
		errs[i] = configAllowed(s, r, kmsg.ACLOperationAlterConfigs, int8(res.ResourceType), res.ResourceName)
		for _, c := range res.Configs {
			if errs[i] != nil {
				break
			}
			if seen[c.Name] {
				errs[i], msgs[i] = kerr.InvalidRequest, fmt.Sprintf("config %s given twice", c.Name)
				break
			}
			seen[c.Name] = true
			switch {
			case c.Op == kmsg.IncrementalAlterConfigOpSet && c.Value != nil:
				a.Set[c.Name] = *c.Value
			case c.Op == kmsg.IncrementalAlterConfigOpDelete:
				a.Delete = append(a.Delete, c.Name)
			default:
				errs[i], msgs[i] = kerr.InvalidRequest, fmt.Sprintf("config %s: operation %v is not supported", c.Name, c.Op)
			}
		}
		if errs[i] == nil {
			alts = append(alts, a)
			idx = append(idx, i)
		}
	}
	if len(alts) > 0 {
		results, err := s.broker.(Configs).AlterConfigs(ctx, alts, req.ValidateOnly)
		if err != nil {
			return nil, fmt.Errorf("broker alter configs: %w", err)
		}
		for j, i := range idx {
			if j < len(results) {
				errs[i], msgs[i] = results[j].Err, results[j].ErrMessage
			}
		}
	}
	for i, res := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		rr.ErrorCode = quorum.ErrorCode(errs[i])
		if msgs[i] != "" {
			rr.ErrorMessage = kmsg.StringPtr(msgs[i])
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}
