package sasl

import (
	"strings"
	"testing"
)

// FuzzParseJAAS: no input crashes the parser, and what it accepts has
// a class, a flag and options it reads back the same when re-quoted.
func FuzzParseJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`)
	f.Add(`X optional a=b;`)
	f.Fuzz(func(t *testing.T, s string) {
		j, err := ParseJAAS(s)
		if err != nil {
			return
		}
		var b strings.Builder
		b.WriteString(j.LoginModule + " " + j.Flag)
		for k, v := range j.Options {
			b.WriteString(" " + k + `="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`)
		}
		b.WriteString(";")
		j2, err := ParseJAAS(b.String())
		if err != nil || j2.LoginModule != j.LoginModule || len(j2.Options) != len(j.Options) {
			t.Fatalf("%q re-quoted as %q: %+v %v", s, b.String(), j2, err)
		}
		for k, v := range j.Options {
			if j2.Options[k] != v {
				t.Fatalf("option %s: %q became %q", k, v, j2.Options[k])
			}
		}
	})
}

// FuzzScramServer: any pair of client messages ends in an answer or an
// error, never a crash, and never a success without the password.
func FuzzScramServer(f *testing.F) {
	f.Add(rfc7677.clientFirst, rfc7677.clientFinal)
	f.Add("n,a=user,n=user,r=x", "c=biws,r=x,p=AAAA")
	f.Add("y,,n=us=2Cer,r=abc,ext=1", "c=eSws,r=abc,p=")
	f.Fuzz(func(t *testing.T, first, final string) {
		s := rfcServer(t, "another password")
		if _, _, err := s.Step([]byte(first)); err != nil {
			return
		}
		if _, done, err := s.Step([]byte(final)); done || err == nil {
			t.Fatalf("authenticated with the wrong password: %q %q", first, final)
		}
	})
}

// FuzzParsePlain: no input crashes; an accepted message has a user and
// a password without NUL.
func FuzzParsePlain(f *testing.F) {
	f.Add([]byte("\x00alice\x00alice-secret"))
	f.Add([]byte("alice\x00alice\x00pw"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		u, p, err := ParsePlain(msg)
		if err != nil {
			return
		}
		if u == "" || p == "" || strings.ContainsRune(u+p, 0) {
			t.Fatalf("%q parsed as %q %q", msg, u, p)
		}
	})
}

// FuzzParseScramSpecs: no input crashes; an accepted spec names a SCRAM
// mechanism.
func FuzzParseScramSpecs(f *testing.F) {
	f.Add(`SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password="a,b]"]`)
	f.Add(`SCRAM-SHA-512=[name=admin,salt="N3E=",saltedpassword="YCE=",iterations=4096]`)
	f.Add(`SCRAM-SHA-256`)
	f.Fuzz(func(t *testing.T, s string) {
		specs, err := ParseScramSpecs(s)
		if err != nil {
			return
		}
		for _, sp := range specs {
			if _, err := Scram(sp.Mechanism); err != nil {
				t.Fatalf("%q: mechanism %q", s, sp.Mechanism)
			}
		}
	})
}
