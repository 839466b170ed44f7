package sasl

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// ErrBadJWKS: a JSON Web Key Set (RFC 7517) with no key Sluice can use.
var ErrBadJWKS = errors.New("bad JWKS")

// MinRSABits is the smallest RSA key a JWKS may hold (jose4j's rule).
const MinRSABits = 2048

// JWKS is a parsed JSON Web Key Set: the public signature keys of a
// token issuer (sasl.oauthbearer.jwks.endpoint.url). Immutable.
type JWKS struct {
	byKID map[string]jwk
	all   []jwk
}

// jwk is one usable key.
type jwk struct {
	kid string
	alg string // "" when the JWK names none
	key any    // *rsa.PublicKey or *ecdsa.PublicKey
}

// Len is the number of usable keys.
func (s JWKS) Len() int { return len(s.all) }

// KIDs are the key ids, in the set's order.
func (s JWKS) KIDs() []string {
	out := make([]string, 0, len(s.all))
	for _, k := range s.all {
		out = append(out, k.kid)
	}
	return out
}

// ErrUnknownKey: no key of the set has the token's kid (or, for a token
// without one, no single key fits its algorithm). A JWKS endpoint may
// have rotated: the caller may refresh.
var ErrUnknownKey = errors.New("no key in the JWKS for the token")

// Key implements Keys: the key with id kid, whose type (and alg, when
// the JWK names one) fits alg. A token without a kid is verified by the
// set's only key of its type.
func (s JWKS) Key(kid, alg string) (any, error) {
	fits := func(k jwk) bool {
		if k.alg != "" && k.alg != alg {
			return false
		}
		switch k.key.(type) {
		case *rsa.PublicKey:
			return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
		case *ecdsa.PublicKey:
			return strings.HasPrefix(alg, "ES")
		}
		return false
	}
	if kid != "" {
		k, ok := s.byKID[kid]
		if !ok {
			return nil, fmt.Errorf("%w: kid %q is not among %q", ErrUnknownKey, kid, s.KIDs())
		}
		if !fits(k) {
			return nil, fmt.Errorf("key %q does not fit algorithm %s", kid, alg)
		}
		return k.key, nil
	}
	var found []jwk
	for _, k := range s.all {
		if fits(k) {
			found = append(found, k)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%w: the token has no kid and %d keys fit %s", ErrUnknownKey, len(found), alg)
	}
	return found[0].key, nil
}

// ParseJWKS reads a JWKS: {"keys":[...]}. RSA keys (n, e; at least
// MinRSABits) and EC keys (crv P-256, P-384 or P-521, x, y on the curve)
// whose use, if given, is "sig" are kept; other key types and encryption
// keys are skipped, as jose4j skips them. A set left with no key, a key
// that does not decode, or two keys with one kid is an error.
func ParseJWKS(b []byte) (JWKS, error) {
	var raw struct {
		Keys []struct {
			Kty string `json:"kty"`
			Use string `json:"use"`
			Kid string `json:"kid"`
			Alg string `json:"alg"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return JWKS{}, fmt.Errorf("%w: %v", ErrBadJWKS, err)
	}
	s := JWKS{byKID: map[string]jwk{}}
	for i, k := range raw.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		var key any
		var err error
		switch k.Kty {
		case "RSA":
			key, err = rsaKey(k.N, k.E)
		case "EC":
			key, err = ecKey(k.Crv, k.X, k.Y)
		default:
			continue
		}
		if err != nil {
			return JWKS{}, fmt.Errorf("%w: key %d (kid %q): %v", ErrBadJWKS, i, k.Kid, err)
		}
		if _, dup := s.byKID[k.Kid]; dup && k.Kid != "" {
			return JWKS{}, fmt.Errorf("%w: kid %q given twice", ErrBadJWKS, k.Kid)
		}
		j := jwk{kid: k.Kid, alg: k.Alg, key: key}
		if k.Kid != "" {
			s.byKID[k.Kid] = j
		}
		s.all = append(s.all, j)
	}
	if len(s.all) == 0 {
		return JWKS{}, fmt.Errorf("%w: no RSA or EC signature key among its %d keys", ErrBadJWKS, len(raw.Keys))
	}
	return s, nil
}

// rsaKey decodes an RSA JWK's modulus and exponent.
func rsaKey(n64, e64 string) (*rsa.PublicKey, error) {
	n, err := base64.RawURLEncoding.DecodeString(n64)
	if err != nil {
		return nil, fmt.Errorf("n: %v", err)
	}
	e, err := base64.RawURLEncoding.DecodeString(e64)
	if err != nil {
		return nil, fmt.Errorf("e: %v", err)
	}
	if len(e) == 0 || len(e) > 4 {
		return nil, fmt.Errorf("e has %d bytes", len(e))
	}
	var exp int
	for _, c := range e {
		exp = exp<<8 | int(c)
	}
	if exp < 3 || exp%2 == 0 {
		return nil, fmt.Errorf("exponent %d", exp)
	}
	k := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}
	if k.N.BitLen() < MinRSABits {
		return nil, fmt.Errorf("RSA key of %d bits: at least %d", k.N.BitLen(), MinRSABits)
	}
	return k, nil
}

// ecKey decodes an EC JWK's point and checks it is on the curve.
func ecKey(crv, x64, y64 string) (*ecdsa.PublicKey, error) {
	var c elliptic.Curve
	switch crv {
	case "P-256":
		c = elliptic.P256()
	case "P-384":
		c = elliptic.P384()
	case "P-521":
		c = elliptic.P521()
	default:
		return nil, fmt.Errorf("curve %q: want P-256, P-384 or P-521", crv)
	}
	size := (c.Params().BitSize + 7) / 8
	x, err := base64.RawURLEncoding.DecodeString(x64)
	if err != nil || len(x) != size {
		return nil, fmt.Errorf("x is not %d base64url bytes", size)
	}
	y, err := base64.RawURLEncoding.DecodeString(y64)
	if err != nil || len(y) != size {
		return nil, fmt.Errorf("y is not %d base64url bytes", size)
	}
	point := append(append([]byte{4}, x...), y...)
	k, err := ecdsa.ParseUncompressedPublicKey(c, point)
	if err != nil {
		return nil, fmt.Errorf("the point is not on %s: %v", crv, err)
	}
	return k, nil
}
