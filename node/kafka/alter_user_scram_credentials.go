package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/sasl"
	"github.com/sluice-log/sluice/quorum"
)

// AlterUserScramCredentials (key 51), version 0; served when the Broker
// implements ScramAdmin (KIP-554).
//
// An upsertion carries the salt and the salted password (the client ran
// PBKDF2): the handler derives StoredKey and ServerKey here (node/sasl),
// so neither the password nor the salted password goes further. The
// quorum validates as Kafka's controller does (quorum/scram.go): one
// result per user, in order of first mention, each user altered wholly
// or not at all. Mechanism 1 is SCRAM-SHA-256, 2 SCRAM-SHA-512; any other
// is UNSUPPORTED_SASL_MECHANISM for its user.
func handleAlterUserSCRAMCredentials(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	cmd := &quorum.AlterScramCredentials{}
	for _, d := range req.Deletions {
		cmd.Deletions = append(cmd.Deletions, quorum.ScramDeletion{User: d.Name, Mechanism: scramMechanismName(d.Mechanism)})
	}
	for _, u := range req.Upsertions {
		up := quorum.ScramUpsertion{User: u.Name, Mechanism: scramMechanismName(u.Mechanism)}
		if m, err := sasl.Scram(up.Mechanism); err == nil && len(u.Salt) > 0 && len(u.SaltedPassword) > 0 {
			c := m.CredentialFromSalted(u.SaltedPassword, u.Salt, int(u.Iterations))
			up.Credential = quorum.ScramCredential{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey}
		}
		up.Credential.Iterations = u.Iterations
		cmd.Upsertions = append(cmd.Upsertions, up)
	}
	reply, err := s.broker.(ScramAdmin).AlterScram(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("broker alter SCRAM credentials: %w", err)
	}
	for _, res := range reply.Results {
		rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		rr.User, rr.ErrorCode = res.User, res.Code
		if res.Code != 0 {
			msg := res.Message
			rr.ErrorMessage = &msg
		}
		resp.Results = append(resp.Results, rr)
	}
	return resp, nil
}

// ScramAdmin is the optional capability behind the SCRAM credential APIs.
type ScramAdmin interface {
	// AlterScram carries out c through the quorum and returns its
	// reply; an error means no answer (the connection closes).
	AlterScram(ctx context.Context, c *quorum.AlterScramCredentials) (*quorum.AlterScramReply, error)
	// ScramUsers returns the iterations of every credential, by user
	// and mechanism name (the metadata image's).
	ScramUsers(ctx context.Context) (map[string]map[string]int32, error)
}

// scramMechanismName is the name of Kafka's ScramMechanism type code.
func scramMechanismName(m int8) string {
	switch m {
	case 1:
		return sasl.MechanismScramSHA256
	case 2:
		return sasl.MechanismScramSHA512
	}
	return fmt.Sprintf("UNKNOWN(%d)", m)
}

// scramMechanismType is the ScramMechanism type code of a name.
func scramMechanismType(name string) int8 {
	switch name {
	case sasl.MechanismScramSHA256:
		return 1
	case sasl.MechanismScramSHA512:
		return 2
	}
	return 0
}
