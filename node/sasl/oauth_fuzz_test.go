package sasl

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzParseOAuthBearer: no input crashes the parser; what it accepts has
// a token of the allowed characters and rebuilds into a message that
// parses the same.
func FuzzParseOAuthBearer(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer abc.def.ghi\x01\x01"))
	f.Add([]byte("n,a=alice,\x01auth=bearer  x\x01traceId=1\x01\x01"))
	f.Add([]byte("y,,\x01k=v\x01auth=Bearer -_.\x01\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseOAuthBearer(b)
		if err != nil {
			if !errors.Is(err, ErrBadMessage) {
				t.Fatalf("%q: %v is not ErrBadMessage", b, err)
			}
			return
		}
		if m.Token == "" || strings.ContainsAny(m.Token, " \x01,=") {
			t.Fatalf("%q: token %q", b, m.Token)
		}
		var s strings.Builder
		s.WriteString("n,")
		if m.AuthzID != "" {
			s.WriteString("a=" + m.AuthzID)
		}
		s.WriteString(",\x01auth=Bearer " + m.Token + "\x01")
		for k, v := range m.Extensions {
			s.WriteString(k + "=" + v + "\x01")
		}
		s.WriteString("\x01")
		m2, err := ParseOAuthBearer([]byte(s.String()))
		if err != nil || m2.Token != m.Token || m2.AuthzID != m.AuthzID || len(m2.Extensions) != len(m.Extensions) {
			t.Fatalf("%q rebuilt as %q: %+v %v", b, s.String(), m2, err)
		}
	})
}

// FuzzOAuthToken: any token, against a JWKS (a fixed P-256 key) or
// unsecured, ends in a token with a principal or in ErrInvalidToken;
// with the JWKS nothing but a token signed by its key is accepted, and
// the fuzzer has no way to sign one, so nothing is.
func FuzzOAuthToken(f *testing.F) {
	enc := base64.RawURLEncoding.EncodeToString
	f.Add(enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(`{"sub":"a","exp":99999999999}`)) + ".")
	f.Add(enc([]byte(`{"alg":"ES256","kid":"k"}`)) + "." + enc([]byte(`{"sub":"a","exp":1e300,"iat":0}`)) + ".AAAA")
	f.Add(enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(`{"sub":"a","exp":"x","aud":[1]}`)) + ".")
	f.Add("a.b.c.d")
	set, err := ParseJWKS([]byte(`{"keys":[{"kty":"EC","crv":"P-256","kid":"k",` +
		`"x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"}]}`))
	if err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, tok string) {
		for _, v := range []*OAuthValidator{{Keys: set}, {}} {
			got, err := v.Validate(tok, now)
			if err != nil {
				if !errors.Is(err, ErrInvalidToken) {
					t.Fatalf("%q: %v is not ErrInvalidToken", tok, err)
				}
				continue
			}
			if v.Keys != nil {
				t.Fatalf("%q accepted against a JWKS the fuzzer holds no key of: %+v", tok, got)
			}
			if strings.TrimSpace(got.Principal) == "" || !got.Expiry.After(now) {
				t.Fatalf("%q: accepted %+v", tok, got)
			}
		}
	})
}

// FuzzParseJWKS: no key set crashes the parser; a parsed one has keys.
func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","kid":"k","x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"},{"kty":"oct"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseJWKS(b)
		if err != nil {
			if !errors.Is(err, ErrBadJWKS) {
				t.Fatalf("%q: %v is not ErrBadJWKS", b, err)
			}
			return
		}
		if s.Len() == 0 {
			t.Fatalf("%q: parsed with no keys", b)
		}
		for _, kid := range s.KIDs() {
			_, _ = s.Key(kid, "ES256")
			_, _ = s.Key(kid, "RS256")
		}
	})
}
