package sasl

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-log/sluice/node/tlstest"
)

func initial(token string) []byte {
	return []byte("n,,\x01auth=Bearer " + token + "\x01\x01")
}

func TestParseOAuthBearer(t *testing.T) {
	m, err := ParseOAuthBearer([]byte("n,a=alice,\x01auth=Bearer abc.DEF-_.x\x01traceId=1 2\x01\x01"))
	if err != nil || m.AuthzID != "alice" || m.Token != "abc.DEF-_.x" || m.Extensions["traceId"] != "1 2" {
		t.Fatalf("%+v %v", m, err)
	}
	for _, bad := range []string{
		"",
		"p=tls-unique,,\x01auth=Bearer x\x01\x01", // channel binding
		"n,,\x01auth=Bearer x\x01",                // one ^A at the end
		"n,,auth=Bearer x\x01\x01",                // no ^A after the header
		"n,,\x01auth=Basic x\x01\x01",             // not a bearer token
		"n,,\x01auth=Bearer x y\x01\x01",          // token with a space
		"n,,\x01k=v\x01\x01",                      // no token
		"n,,\x01auth=Bearer x\x01auth=Bearer y\x01\x01",
		"n,,\x01auth=Bearer x\x011k=v\x01\x01", // key not letters
		"n,a=alice\x01auth=Bearer x\x01\x01",   // unterminated authzid
	} {
		if _, err := ParseOAuthBearer([]byte(bad)); !errors.Is(err, ErrBadMessage) || !errors.Is(err, ErrAuthenticationFailed) {
			t.Errorf("%q: %v, want ErrBadMessage", bad, err)
		}
	}
}

// TestOAuthValidator: tokens signed by RS256 and ES256 keys of a JWKS
// validate to their subject and expiry; expired ones (past the skew),
// wrong audiences, issuers, signatures, unknown kids, missing claims and
// alg none are refused with the reason.
func TestOAuthValidator(t *testing.T) {
	rs, err := tlstest.NewIssuer("rs", "RS256")
	if err != nil {
		t.Fatal(err)
	}
	es, err := tlstest.NewIssuer("es", "ES256")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := tlstest.NewIssuer("es", "ES256") // same kid, another key
	set, err := ParseJWKS(tlstest.JWKS(rs, es))
	if err != nil || set.Len() != 2 {
		t.Fatalf("%v %d", err, set.Len())
	}
	v := &OAuthValidator{Keys: set, Audience: []string{"kafka", "other"}, Issuer: rs.Name, ClockSkew: 30 * time.Second}
	now := time.Now()
	for _, iss := range []*tlstest.Issuer{rs, es} {
		tok, err := iss.Token("alice", "kafka", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.Validate(tok, now)
		if err != nil || got.Principal != "alice" || got.Expiry.Sub(now) < 59*time.Minute || len(got.Scope) != 1 || got.Scope[0] != "kafka" {
			t.Fatalf("%s: %+v %v", iss.Alg, got, err)
		}
	}
	sign := func(i *tlstest.Issuer, edit func(map[string]any)) string {
		c := map[string]any{"sub": "alice", "aud": []string{"x", "kafka"}, "iss": rs.Name, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		edit(c)
		tok, err := i.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if _, err := v.Validate(sign(es, func(map[string]any) {}), now); err != nil {
		t.Fatalf("aud as a list: %v", err)
	}
	if _, err := v.Validate(sign(es, func(c map[string]any) {
		c["iat"] = now.Add(-time.Hour).Unix()
		c["exp"] = now.Add(-20 * time.Second).Unix()
	}), now); err != nil {
		t.Fatalf("expired within the clock skew: %v", err)
	}
	unsigned := tlstest.Unsecured(map[string]any{"sub": "alice", "aud": "kafka", "iss": rs.Name, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	stripped := strings.Join(strings.Split(sign(es, func(map[string]any) {}), ".")[:2], ".") + "."
	for name, tc := range map[string]struct {
		tok  string
		want string
	}{
		"expired":    {sign(rs, func(c map[string]any) { c["exp"] = now.Add(-time.Minute).Unix() }), "expired"},
		"wrong aud":  {sign(rs, func(c map[string]any) { c["aud"] = "elsewhere" }), "audience"},
		"no aud":     {sign(rs, func(c map[string]any) { delete(c, "aud") }), "audience"},
		"wrong iss":  {sign(rs, func(c map[string]any) { c["iss"] = "https://evil.test" }), "issuer"},
		"no exp":     {sign(rs, func(c map[string]any) { delete(c, "exp") }), "exp"},
		"no iat":     {sign(rs, func(c map[string]any) { delete(c, "iat") }), "iat"},
		"future iat": {sign(rs, func(c map[string]any) { c["iat"] = now.Add(time.Hour).Unix() }), "future"},
		"nbf":        {sign(rs, func(c map[string]any) { c["nbf"] = now.Add(time.Hour).Unix() }), "not valid before"},
		"no sub":     {sign(rs, func(c map[string]any) { delete(c, "sub") }), "principal"},
		"sub number": {sign(rs, func(c map[string]any) { c["sub"] = 7 }), "principal"},
		"other key":  {sign(other, func(map[string]any) {}), "signature"},
		"unknown kid": {func() string {
			other.KID = "nope"
			defer func() { other.KID = "es" }()
			return sign(other, func(map[string]any) {})
		}(), "kid"},
		"alg none":       {unsigned, "signing method"},
		"no signature":   {stripped, "signature"},
		"not a jwt":      {"abc", "malformed"},
		"bad exp":        {sign(rs, func(c map[string]any) { c["exp"] = "tomorrow" }), "not a number"},
		"exp before iat": {sign(rs, func(c map[string]any) { c["iat"] = now.Unix(); c["exp"] = now.Add(-time.Second).Unix() }), "before it was issued"},
	} {
		_, err := v.Validate(tc.tok, now)
		if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidToken about %q", name, err, tc.want)
		}
	}
	// The subject and scope claim names are configurable.
	v2 := &OAuthValidator{Keys: set, SubClaim: "client_id", ScopeClaim: "scp"}
	got, err := v2.Validate(sign(rs, func(c map[string]any) { c["client_id"] = "svc"; c["scp"] = []string{"a", "b"} }), now)
	if err != nil || got.Principal != "svc" || len(got.Scope) != 2 {
		t.Fatalf("claim names: %+v %v", got, err)
	}
}

// TestOAuthUnsecured: Kafka's default validator takes alg none tokens
// only, with exp and the principal claim, the required scope, and no
// skew by default.
func TestOAuthUnsecured(t *testing.T) {
	now := time.Now()
	v := &OAuthValidator{RequiredScope: []string{"kafka"}}
	tok := tlstest.Unsecured(map[string]any{"sub": "bob", "exp": float64(now.Add(time.Minute).UnixMilli()) / 1000, "scope": "kafka read"})
	got, err := v.Validate(tok, now)
	if err != nil || got.Principal != "bob" {
		t.Fatalf("%+v %v", got, err)
	}
	iss, _ := tlstest.NewIssuer("k", "ES256")
	signed, _ := iss.Token("bob", "kafka", time.Hour)
	for name, tc := range map[string]struct{ tok, want string }{
		"signed":    {signed, "unsecured tokens only"},
		"expired":   {tlstest.Unsecured(map[string]any{"sub": "bob", "exp": now.Add(-time.Second).Unix(), "scope": "kafka"}), "expired"},
		"scope":     {tlstest.Unsecured(map[string]any{"sub": "bob", "exp": now.Add(time.Minute).Unix(), "scope": "read"}), "scope"},
		"alg HS256": {strings.Replace(tok, tok[:strings.IndexByte(tok, '.')], "eyJhbGciOiJIUzI1NiJ9", 1), "alg"},
	} {
		if _, err := v.Validate(tc.tok, now); !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidToken about %q", name, err, tc.want)
		}
	}
}

// TestOAuthServer: a valid token ends the exchange at once; an invalid
// one gets RFC 7628's status and fails at the client's ^A; an authzid
// other than the subject is refused.
func TestOAuthServer(t *testing.T) {
	iss, _ := tlstest.NewIssuer("k", "RS256")
	set, _ := ParseJWKS(tlstest.JWKS(iss))
	v := &OAuthValidator{Keys: set, Audience: []string{"kafka"}}
	good, _ := iss.Token("alice", "kafka", time.Hour)
	s := NewOAuthServer(v, time.Now)
	if ans, done, err := s.Step(initial(good)); err != nil || !done || len(ans) != 0 || s.Token().Principal != "alice" {
		t.Fatalf("%q %v %v", ans, done, err)
	}
	bad, _ := iss.Token("alice", "elsewhere", time.Hour)
	s = NewOAuthServer(v, time.Now)
	ans, done, err := s.Step(initial(bad))
	if err != nil || done || string(ans) != `{"status":"invalid_token"}` {
		t.Fatalf("invalid token: %q %v %v", ans, done, err)
	}
	if _, done, err := s.Step([]byte{1}); done || !errors.Is(err, ErrAuthenticationFailed) || !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("after the status: %v %v", done, err)
	}
	s = NewOAuthServer(v, time.Now)
	if _, _, err := s.Step([]byte("n,a=bob,\x01auth=Bearer " + good + "\x01\x01")); !errors.Is(err, ErrAuthenticationFailed) {
		t.Fatalf("authzid bob with alice's token: %v", err)
	}
}

func TestParseJWKS(t *testing.T) {
	rs, _ := tlstest.NewIssuer("rs", "RS256")
	es, _ := tlstest.NewIssuer("es", "ES256")
	mixed := `{"keys":[{"kty":"oct","k":"c2VjcmV0"},{"kty":"OKP","crv":"Ed25519","x":"abc"},` +
		strings.TrimPrefix(string(tlstest.JWKS(es)), `{"keys":[`)
	s, err := ParseJWKS([]byte(mixed))
	if err != nil || s.Len() != 1 || s.KIDs()[0] != "es" {
		t.Fatalf("unknown key types skipped: %v %v", err, s.KIDs())
	}
	if _, err := s.Key("", "ES256"); err != nil {
		t.Fatalf("no kid, one EC key: %v", err)
	}
	if _, err := s.Key("es", "RS256"); err == nil {
		t.Fatal("an EC key verifies RS256")
	}
	for name, js := range map[string]string{
		"not json":  `{`,
		"empty":     `{"keys":[]}`,
		"enc only":  strings.Replace(string(tlstest.JWKS(rs)), `"use":"sig"`, `"use":"enc"`, 1),
		"dup kid":   string(tlstest.JWKS(rs, rs)),
		"bad curve": strings.Replace(string(tlstest.JWKS(es)), `"P-256"`, `"P-192"`, 1),
		"off curve": strings.Replace(string(tlstest.JWKS(es)), `"x":"`, `"x":"AA`, 1),
		"small rsa": `{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`,
		"even exp":  `{"keys":[{"kty":"RSA","n":"` + es.JWK()["x"] + `","e":"Ag"}]}`,
	} {
		if _, err := ParseJWKS([]byte(js)); !errors.Is(err, ErrBadJWKS) {
			t.Errorf("%s: %v, want ErrBadJWKS", name, err)
		}
	}
}
