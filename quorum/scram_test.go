package quorum

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func cred(iter int32) ScramCredential {
	return ScramCredential{Salt: []byte("salt"), StoredKey: []byte("stored"), ServerKey: []byte("server"), Iterations: iter}
}

// TestAlterScram: upserts and deletes replay into the image; each user
// succeeds or fails as a whole, with Kafka's codes; a snapshot round
// trip and Clone keep the credentials.
func TestAlterScram(t *testing.T) {
	im := NewImage()
	apply := func(cmd Command) *AlterScramReply {
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
		return reply.(*AlterScramReply)
	}
	r := apply(&AlterScramCredentials{Upsertions: []ScramUpsertion{
		{User: "alice", Mechanism: ScramSHA256, Credential: cred(8192)},
		{User: "alice", Mechanism: ScramSHA512, Credential: cred(4096)},
		{User: "bob", Mechanism: ScramSHA256, Credential: cred(100)},
		{User: "", Mechanism: ScramSHA256, Credential: cred(4096)},
		{User: "carol", Mechanism: "SCRAM-SHA-1", Credential: cred(4096)},
		{User: "dave", Mechanism: ScramSHA256, Credential: cred(4096)},
		{User: "dave", Mechanism: ScramSHA256, Credential: cred(4096)},
		{User: "erin", Mechanism: ScramSHA256, Credential: cred(20000)},
	}})
	want := []struct {
		user string
		code int16
		msg  string
	}{
		{"alice", 0, ""},
		{"bob", kerr.UnacceptableCredential.Code, "Too few iterations"},
		{"", kerr.UnacceptableCredential.Code, "Username must not be empty"},
		{"carol", kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"},
		{"dave", kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"},
		{"erin", kerr.UnacceptableCredential.Code, "Too many iterations"},
	}
	if len(r.Results) != len(want) {
		t.Fatalf("results %+v", r.Results)
	}
	for i, w := range want {
		if g := r.Results[i]; g.User != w.user || g.Code != w.code || g.Message != w.msg {
			t.Errorf("result %d = %+v, want %+v", i, g, w)
		}
	}
	if c, ok := im.ScramCredential("alice", ScramSHA256); !ok || c.Iterations != 8192 {
		t.Fatalf("alice: %+v %v", c, ok)
	}
	if _, ok := im.ScramCredential("dave", ScramSHA256); ok || len(im.Scram) != 1 {
		t.Fatalf("a refused user was stored: %+v", im.Scram)
	}
	clone := im.Clone()
	clone.Scram["alice"][ScramSHA256].Salt[0] = 'X'
	if c, _ := im.ScramCredential("alice", ScramSHA256); c.Salt[0] != 's' {
		t.Fatal("Clone shares the salt")
	}

	r = apply(&AlterScramCredentials{Deletions: []ScramDeletion{
		{User: "alice", Mechanism: ScramSHA512}, {User: "nobody", Mechanism: ScramSHA256},
	}})
	if r.Results[0].Code != 0 || r.Results[1].Code != kerr.ResourceNotFound.Code {
		t.Fatalf("deletions: %+v", r.Results)
	}
	if _, ok := im.ScramCredential("alice", ScramSHA512); ok {
		t.Fatal("deleted credential still there")
	}
	r = apply(&AlterScramCredentials{Deletions: []ScramDeletion{{User: "alice", Mechanism: ScramSHA256}}})
	if r.Results[0].Code != 0 || im.Scram != nil && len(im.Scram) != 0 {
		t.Fatalf("last credential of alice: %+v, image %+v", r.Results, im.Scram)
	}
}

// TestBootstrapScram: SetClusterID writes its credentials with the
// cluster id, and never again.
func TestBootstrapScram(t *testing.T) {
	im := NewImage()
	boot := []ScramCredentialRecord{{User: "admin", Mechanism: ScramSHA512, Credential: cred(4096)}}
	recs, _, err := Plan(im, Policy{}, &SetClusterID{ClusterID: "c1", Scram: boot})
	if err != nil || len(recs) != 2 {
		t.Fatalf("%v %v", recs, err)
	}
	b, err := EncodeEntry(recs)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := DecodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range decoded {
		if err := im.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	if c, ok := im.ScramCredential("admin", ScramSHA512); !ok || string(c.StoredKey) != "stored" {
		t.Fatalf("admin: %+v %v", c, ok)
	}
	if recs, _, _ := Plan(im, Policy{}, &SetClusterID{ClusterID: "c1", Scram: boot}); len(recs) != 0 {
		t.Fatalf("bootstrap again: %v", recs)
	}
	if _, _, err := Plan(NewImage(), Policy{}, &SetClusterID{ClusterID: "c1", Scram: []ScramCredentialRecord{{User: "x", Mechanism: ScramSHA256, Credential: cred(1)}}}); err == nil {
		t.Fatal("a bootstrap credential with 1 iteration accepted")
	}
}
