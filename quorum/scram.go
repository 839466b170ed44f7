package quorum

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// SCRAM credentials live in the image, as KRaft's
// UserScramCredentialRecord: per user and mechanism the salt, StoredKey,
// ServerKey and iteration count (RFC 5802), never a password. The node
// derives the keys (node/sasl) from the salted password that
// AlterUserScramCredentials carries (KIP-554), or from a password at
// format time (sluice init --add-scram, written with the cluster id by
// the first active controller: SetClusterID.Scram).

// The SCRAM mechanisms, by Kafka's names.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Kafka's bounds on SCRAM iterations (AlterUserScramCredentials).
const (
	MinScramIterations = 4096
	MaxScramIterations = 16384
)

// CmdAlterScram names AlterScramCredentials on the wire.
const CmdAlterScram CommandType = "alter_scram_credentials"

// The record types; part of the on-disk format.
const (
	TypeScramCredential       RecordType = "user_scram_credential"
	TypeRemoveScramCredential RecordType = "remove_user_scram_credential"
)

// ScramCredential is one user's credential for one mechanism.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int32  `json:"iterations"`
}

// ScramUpsertion sets a user's credential for a mechanism.
type ScramUpsertion struct {
	User       string          `json:"user"`
	Mechanism  string          `json:"mechanism"`
	Credential ScramCredential `json:"credential"`
}

// ScramDeletion removes a user's credential for a mechanism.
type ScramDeletion struct {
	User      string `json:"user"`
	Mechanism string `json:"mechanism"`
}

// AlterScramCredentials is Kafka's AlterUserScramCredentials: each user
// succeeds or fails as a whole (a user with one bad alteration gets none
// applied). Reply: *AlterScramReply, one result per user in order of
// first mention.
type AlterScramCredentials struct {
	Upsertions []ScramUpsertion `json:"upsertions,omitempty"`
	Deletions  []ScramDeletion  `json:"deletions,omitempty"`
}

// ScramResult is the outcome for one user; Code is a Kafka error code.
type ScramResult struct {
	User    string `json:"user"`
	Code    int16  `json:"code"`
	Message string `json:"message,omitempty"`
}

// AlterScramReply is the reply of AlterScramCredentials.
type AlterScramReply struct {
	Results []ScramResult `json:"results"`
}

func (*AlterScramCredentials) CommandType() CommandType { return CmdAlterScram }
func (*AlterScramCredentials) newReply() any            { return &AlterScramReply{} }

// ScramCredentialRecord sets a user's credential for a mechanism.
type ScramCredentialRecord struct {
	User       string          `json:"user"`
	Mechanism  string          `json:"mechanism"`
	Credential ScramCredential `json:"credential"`
}

// RemoveScramCredentialRecord removes a user's credential for a mechanism.
type RemoveScramCredentialRecord struct {
	User      string `json:"user"`
	Mechanism string `json:"mechanism"`
}

func (*ScramCredentialRecord) Type() RecordType       { return TypeScramCredential }
func (*RemoveScramCredentialRecord) Type() RecordType { return TypeRemoveScramCredential }

func (r *ScramCredentialRecord) String() string {
	return fmt.Sprintf("user-scram-credential user=%s mechanism=%s iterations=%d", r.User, r.Mechanism, r.Credential.Iterations)
}

func (r *RemoveScramCredentialRecord) String() string {
	return fmt.Sprintf("remove-user-scram-credential user=%s mechanism=%s", r.User, r.Mechanism)
}

// ScramCredential returns user's credential for mechanism, if any. The
// slices are the image's: do not modify them.
func (im *Image) ScramCredential(user, mechanism string) (ScramCredential, bool) {
	c, ok := im.Scram[user][mechanism]
	return c, ok
}

// scramError is a refusal with Kafka's message for the client.
type scramError struct {
	code *kerr.Error
	msg  string
}

func (e *scramError) Error() string { return e.code.Message + ": " + e.msg }
func (e *scramError) Unwrap() error { return e.code }

func scramErr(code *kerr.Error, msg string) error { return &scramError{code, msg} }

// errMessage is the client's message for err.
func errMessage(err error) string {
	if e, ok := err.(*scramError); ok {
		return e.msg
	}
	return err.Error()
}

// validScram checks one credential alteration as Kafka's controller
// does; nil if fine.
func validScram(user, mechanism string, iterations int32, upsert bool) error {
	switch {
	case user == "":
		return scramErr(kerr.UnacceptableCredential, "Username must not be empty")
	case mechanism != ScramSHA256 && mechanism != ScramSHA512:
		return scramErr(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
	case upsert && iterations < MinScramIterations:
		return scramErr(kerr.UnacceptableCredential, "Too few iterations")
	case upsert && iterations > MaxScramIterations:
		return scramErr(kerr.UnacceptableCredential, "Too many iterations")
	}
	return nil
}

func (p *planner) alterScram(c *AlterScramCredentials) ([]Record, any, error) {
	type op struct {
		rec  Record
		mech string
	}
	var order []string
	ops := map[string][]op{}
	errs := map[string]error{}
	note := func(user, mech string, rec Record, err error) {
		if _, seen := ops[user]; !seen {
			order = append(order, user)
			ops[user] = nil
		}
		if errs[user] != nil {
			return
		}
		if err == nil && slices.ContainsFunc(ops[user], func(o op) bool { return o.mech == mech }) {
			err = scramErr(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		}
		if err != nil {
			errs[user] = err
			return
		}
		ops[user] = append(ops[user], op{rec, mech})
	}
	for _, d := range c.Deletions {
		err := validScram(d.User, d.Mechanism, 0, false)
		if _, ok := p.im.ScramCredential(d.User, d.Mechanism); err == nil && !ok {
			err = scramErr(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
		}
		note(d.User, d.Mechanism, &RemoveScramCredentialRecord{User: d.User, Mechanism: d.Mechanism}, err)
	}
	for _, u := range c.Upsertions {
		err := validScram(u.User, u.Mechanism, u.Credential.Iterations, true)
		if err == nil && (len(u.Credential.Salt) == 0 || len(u.Credential.StoredKey) == 0 || len(u.Credential.ServerKey) == 0) {
			err = scramErr(kerr.UnacceptableCredential, "Salt and keys must not be empty")
		}
		note(u.User, u.Mechanism, &ScramCredentialRecord{User: u.User, Mechanism: u.Mechanism, Credential: u.Credential}, err)
	}
	reply := &AlterScramReply{}
	var recs []Record
	for _, user := range order {
		res := ScramResult{User: user}
		if err := errs[user]; err != nil {
			res.Code, res.Message = ErrorCode(err), errMessage(err)
		} else {
			for _, o := range ops[user] {
				recs = append(recs, o.rec)
			}
		}
		reply.Results = append(reply.Results, res)
	}
	return recs, reply, nil
}

// bootstrapScram checks the credentials written with the cluster id.
func bootstrapScram(recs []ScramCredentialRecord) ([]Record, error) {
	out := make([]Record, 0, len(recs))
	for i := range recs {
		r := recs[i]
		if err := validScram(r.User, r.Mechanism, r.Credential.Iterations, true); err != nil {
			return nil, fmt.Errorf("bootstrap SCRAM credential of %q: %w", r.User, err)
		}
		out = append(out, &r)
	}
	return out, nil
}

// replayScram applies the SCRAM records (called by Replay).
func (im *Image) replayScram(r Record) error {
	switch r := r.(type) {
	case *ScramCredentialRecord:
		if im.Scram == nil {
			im.Scram = map[string]map[string]ScramCredential{}
		}
		if im.Scram[r.User] == nil {
			im.Scram[r.User] = map[string]ScramCredential{}
		}
		im.Scram[r.User][r.Mechanism] = r.Credential.clone()
	case *RemoveScramCredentialRecord:
		if _, ok := im.Scram[r.User][r.Mechanism]; !ok {
			return stale(r, "user %s has no %s credential", r.User, r.Mechanism)
		}
		delete(im.Scram[r.User], r.Mechanism)
		if len(im.Scram[r.User]) == 0 {
			delete(im.Scram, r.User)
		}
	}
	return nil
}

func (c ScramCredential) clone() ScramCredential {
	c.Salt, c.StoredKey, c.ServerKey = slices.Clone(c.Salt), slices.Clone(c.StoredKey), slices.Clone(c.ServerKey)
	return c
}

// cloneScram deep-copies the image's credentials.
func cloneScram(m map[string]map[string]ScramCredential) map[string]map[string]ScramCredential {
	if m == nil {
		return nil
	}
	out := make(map[string]map[string]ScramCredential, len(m))
	for u, byMech := range m {
		out[u] = make(map[string]ScramCredential, len(byMech))
		for mech, c := range byMech {
			out[u][mech] = c.clone()
		}
	}
	return out
}
