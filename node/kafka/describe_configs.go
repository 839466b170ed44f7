package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// DescribeConfigs (key 32), versions 0-4; served when the Broker implements
// Configs.
//
// Topic (type 2) and broker (type 4) resources, every key or the keys
// asked for, with value, read-only flag, source (v1+), type and
// documentation (v3+) from Configs.DescribeConfigs. Synonyms are not listed
// (include_synonyms answers an empty list). is_default (v0) is set for
// values from the defaults.
// Authorization: DESCRIBE_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED)
// or, for a broker, on the cluster (CLUSTER_AUTHORIZATION_FAILED).
func handleDescribeConfigs(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	var rs []ConfigResource
	denied := make([]error, len(req.Resources))
	at := make([]int, len(req.Resources)) // index in rs, -1 if denied
	for i, res := range req.Resources {
		at[i] = -1
		if denied[i] = configAllowed(s, r, kmsg.ACLOperationDescribeConfigs, int8(res.ResourceType), res.ResourceName); denied[i] == nil {
			at[i] = len(rs)
			rs = append(rs, ConfigResource{Type: int8(res.ResourceType), Name: res.ResourceName, Keys: res.ConfigNames})
		}
	}
	var results []ConfigResult
	if len(rs) > 0 {
		var err error
		if results, err = s.broker.(Configs).DescribeConfigs(ctx, rs); err != nil {
			return nil, fmt.Errorf("broker describe configs: %w", err)
		}
	}
	for i, res := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		if denied[i] != nil {
			rr.ErrorCode = quorum.ErrorCode(denied[i])
		} else if at[i] < len(results) {
			out := results[at[i]]
			rr.ErrorCode = quorum.ErrorCode(out.Err)
			if out.ErrMessage != "" {
				rr.ErrorMessage = kmsg.StringPtr(out.ErrMessage)
			}
			for _, e := range out.Entries {
				c := kmsg.NewDescribeConfigsResponseResourceConfig()
				c.Name, c.Value, c.ReadOnly = e.Name, kmsg.StringPtr(e.Value), e.ReadOnly
				if e.Sensitive {
					c.Value, c.IsSensitive = nil, true
				}
				c.Source = kmsg.ConfigSource(e.Source)
				c.IsDefault = e.Source == ConfigSourceDefaultConfig
				c.ConfigType = kmsg.ConfigType(e.Type)
				if e.Doc != "" {
					c.Documentation = kmsg.StringPtr(e.Doc)
				}
				rr.Configs = append(rr.Configs, c)
			}
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}
