package sasl

import (
	"errors"
	"testing"
)

func TestPrincipalRules(t *testing.T) {
	for _, tc := range []struct {
		rules, dn, want string
		err             bool
	}{
		{rules: "DEFAULT", dn: "CN=alice,OU=eng,O=acme", want: "CN=alice,OU=eng,O=acme"},
		{rules: "RULE:^CN=(.*?),OU=.*$/$1/L,DEFAULT", dn: "CN=Alice,OU=eng,O=acme", want: "alice"},
		{rules: "RULE:^CN=(.*?),OU=.*$/$1/L,DEFAULT", dn: "CN=Alice,O=acme", want: "CN=Alice,O=acme"},
		{rules: "RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$2/U", dn: "CN=bob,OU=ops,O=acme", want: "BOB@OPS"},
		{rules: "RULE:^CN=(.*?),OU=.*$/$1/", dn: "O=acme", err: true},
		{rules: "RULE:^CN=([a-z]+)\\/x$/$1\\/y/", dn: "CN=ab/x", want: "ab/y"},
		{rules: "RULE:^CN=(.*)$/$1", dn: "CN=carol", want: "carol"},
		{rules: " RULE:^CN=(.*)$/$1/ , DEFAULT ", dn: "OU=x", want: "OU=x"},
		{rules: "RULE:^CN=(.*)$/x$1y/", dn: "CN=z", want: "xzy"},
		{rules: "RULE:^CN=(.*)$//", dn: "CN=z", err: true},
	} {
		r, err := ParsePrincipalRules(tc.rules)
		if err != nil {
			t.Fatalf("%q: %v", tc.rules, err)
		}
		got, err := r.Map(tc.dn)
		if tc.err {
			if !errors.Is(err, ErrNoPrincipalRule) {
				t.Errorf("%q on %q: %q, %v; want ErrNoPrincipalRule", tc.rules, tc.dn, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q on %q: %q, %v; want %q", tc.rules, tc.dn, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "RULE", "RULE:abc", "DEFAULT,", "DEFAULTX", "RULE:(/x/", "RULE:a/b/X", "DEFAULT DEFAULT"} {
		if _, err := ParsePrincipalRules(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzParsePrincipalRules: no input crashes the parser or the mapping,
// and rules that parse map a name or say why not.
func FuzzParsePrincipalRules(f *testing.F) {
	f.Add("RULE:^CN=(.*?),OU=.*$/$1/L,DEFAULT", "CN=Alice,OU=eng")
	f.Add("DEFAULT", "CN=x")
	f.Add(`RULE:^CN=([a-z]+)\/x$/$1\/y/U`, "CN=ab/x")
	f.Fuzz(func(t *testing.T, rules, dn string) {
		r, err := ParsePrincipalRules(rules)
		if err != nil {
			return
		}
		name, err := r.Map(dn)
		if err == nil && name == "" {
			t.Fatalf("%q on %q: empty name without an error", rules, dn)
		}
		if err != nil && !errors.Is(err, ErrNoPrincipalRule) {
			t.Fatalf("%q on %q: %v", rules, dn, err)
		}
	})
}
