package admin

import (
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluice-log/sluice/node/sasl"
)

// SCRAM credentials, as kafka-configs.sh manages them with --entity-type
// users: AlterUserScramCredentials and DescribeUserScramCredentials
// (KIP-554). The password is salted here (PBKDF2, a random salt) and only
// the salted password goes to the broker, which keeps the stored and
// server keys.

func scramMechanism(name string) (kadm.ScramMechanism, error) {
	switch name {
	case sasl.MechanismScramSHA256:
		return kadm.ScramSha256, nil
	case sasl.MechanismScramSHA512:
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("%q is not SCRAM-SHA-256 or SCRAM-SHA-512", name)
}

// userUpserts parses --add-config for a user:
// SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=...]
// (or salt= and saltedpassword= in base64 instead of password).
func userUpserts(user string, vals []string) ([]kadm.UpsertSCRAM, error) {
	var out []kadm.UpsertSCRAM
	for _, v := range vals {
		specs, err := sasl.ParseScramSpecs(v)
		if err != nil {
			return nil, fmt.Errorf("--add-config %q: %w", v, err)
		}
		for _, sp := range specs {
			m, _ := scramMechanism(sp.Mechanism)
			u := kadm.UpsertSCRAM{User: user, Mechanism: m, Iterations: sasl.DefaultIterations, Password: sp.Attrs["password"]}
			if it, ok := sp.Attrs["iterations"]; ok {
				n, err := strconv.ParseInt(it, 10, 32)
				if err != nil {
					return nil, fmt.Errorf("--add-config %s: iterations %q is not a number", sp.Mechanism, it)
				}
				u.Iterations = int32(n)
			}
			if s, ok := sp.Attrs["salt"]; ok {
				if u.Salt, err = base64.StdEncoding.DecodeString(s); err != nil {
					return nil, fmt.Errorf("--add-config %s: salt is not base64", sp.Mechanism)
				}
			}
			if s, ok := sp.Attrs["saltedpassword"]; ok {
				if u.SaltedPassword, err = base64.StdEncoding.DecodeString(s); err != nil {
					return nil, fmt.Errorf("--add-config %s: saltedpassword is not base64", sp.Mechanism)
				}
			}
			if u.Password == "" && (u.Salt == nil || u.SaltedPassword == nil) {
				return nil, fmt.Errorf("--add-config %s: give password=... (or salt= and saltedpassword=)", sp.Mechanism)
			}
			out = append(out, u)
		}
	}
	return out, nil
}

// userDeletes parses --delete-config for a user: SCRAM-SHA-256[,SCRAM-SHA-512].
func userDeletes(user string, vals []string) ([]kadm.DeleteSCRAM, error) {
	var out []kadm.DeleteSCRAM
	for _, v := range vals {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name == "" {
				continue
			}
			m, err := scramMechanism(name)
			if err != nil {
				return nil, fmt.Errorf("--delete-config: %w", err)
			}
			out = append(out, kadm.DeleteSCRAM{User: user, Mechanism: m})
		}
	}
	return out, nil
}

// alterUsers is `sluice configs alter --entity-type users`.
func (c *configsCmd) alterUsers(s session, w io.Writer) error {
	if c.entityName == "" {
		return fmt.Errorf("--entity-name: name the user")
	}
	ups, err := userUpserts(c.entityName, c.add)
	if err != nil {
		return err
	}
	dels, err := userDeletes(c.entityName, c.del)
	if err != nil {
		return err
	}
	if len(ups)+len(dels) == 0 {
		return fmt.Errorf("nothing to alter: give --add-config 'SCRAM-SHA-256=[password=...]' or --delete-config SCRAM-SHA-256")
	}
	res, err := s.adm.AlterUserSCRAMs(s.ctx, dels, ups)
	if err != nil {
		return c.unreachable(err)
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("alter user %s: %v%s", r.User, r.Err, detail(r.ErrMessage))
		}
	}
	if c.format == "text" {
		fmt.Fprintf(w, "Completed updating config for user %s.\n", c.entityName)
	}
	return nil
}

// UserCredentials is one user of `sluice configs describe --entity-type users`.
type UserCredentials struct {
	User        string           `json:"user"`
	Credentials map[string]int32 `json:"credentials"` // mechanism → iterations
}

// UsersDescription is `sluice configs describe --entity-type users`
// in JSON: the SCRAM credentials and the quotas.
type UsersDescription struct {
	Credentials []UserCredentials `json:"credentials"`
	Quotas      []EntityQuotas    `json:"quotas"`
}

// describeUsers is `sluice configs describe --entity-type users`: one
// user, or every user with a credential or a quota; with
// --entity-default, the default user quotas.
func (c *configsCmd) describeUsers(s session, w io.Writer) error {
	quotas, err := c.describeQuotas(s)
	if err != nil {
		return err
	}
	var out []UserCredentials
	if c.entityDefault {
		return c.emit(w, UsersDescription{Quotas: quotas}, func() { printQuotas(w, quotas) })
	}
	var names []string
	if c.entityName != "" {
		names = []string{c.entityName}
	}
	res, err := s.adm.DescribeUserSCRAMs(s.ctx, names...)
	if err != nil {
		return c.unreachable(err)
	}
	for _, d := range res.Sorted() {
		if d.Err != nil {
			return fmt.Errorf("user %s: %v%s", d.User, d.Err, detail(d.ErrMessage))
		}
		u := UserCredentials{User: d.User, Credentials: map[string]int32{}}
		for _, ci := range d.CredInfos {
			u.Credentials[ci.Mechanism.String()] = ci.Iterations
		}
		out = append(out, u)
	}
	return c.emit(w, UsersDescription{Credentials: out, Quotas: quotas}, func() {
		defer printQuotas(w, quotas)
		for _, u := range out {
			var parts []string
			for _, m := range []string{sasl.MechanismScramSHA256, sasl.MechanismScramSHA512} {
				if it, ok := u.Credentials[m]; ok {
					parts = append(parts, fmt.Sprintf("%s=iterations=%d", m, it))
				}
			}
			fmt.Fprintf(w, "SCRAM credential configs for user-principal '%s' are %s\n", u.User, strings.Join(parts, ", "))
		}
	})
}
