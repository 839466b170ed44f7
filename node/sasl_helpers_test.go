package node

import (
	"strings"
	"testing"

	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/node/sasl"
	"github.com/sluice-log/sluice/quorum"
)

// splitExtra sorts a test node's extra settings: SLUICE_* entries are
// environment variables (the listener.name.<l>.<mechanism>.sasl.jaas.config
// keys have no flag), "bootstrap.scram=SPEC" entries are written to dir's
// bootstrap.json as `sluice init --add-scram SPEC` would, and the rest
// are --key=value flags appended to args.
func splitExtra(t testing.TB, dir string, args, extra []string) ([]string, []string) {
	t.Helper()
	env := []string{}
	var boot []quorum.ScramCredentialRecord
	for _, e := range extra {
		switch {
		case strings.HasPrefix(e, "SLUICE_"):
			env = append(env, e)
		case strings.HasPrefix(e, "bootstrap.scram="):
			specs, err := sasl.ParseScramSpecs(strings.TrimPrefix(e, "bootstrap.scram="))
			if err != nil {
				t.Fatal(err)
			}
			for _, sp := range specs {
				c, err := sp.Credential()
				if err != nil {
					t.Fatal(err)
				}
				boot = append(boot, quorum.ScramCredentialRecord{User: sp.Attrs["name"], Mechanism: sp.Mechanism, Credential: quorum.ScramCredential{
					Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: int32(c.Iterations)}})
			}
		default:
			args = append(args, "--"+e)
		}
	}
	if len(boot) > 0 {
		if err := meta.WriteBootstrap(dir, boot); err != nil {
			t.Fatal(err)
		}
	}
	return args, env
}
