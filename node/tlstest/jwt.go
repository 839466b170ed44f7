package tlstest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer is a throwaway OAuth token issuer for tests of OAUTHBEARER: an
// RSA (RS256) or EC P-256 (ES256) key, its JWKS, and signed JWTs.
//
//	iss, _ := tlstest.NewIssuer("kid-1", "ES256")
//	os.WriteFile(dir+"/jwks.json", iss.JWKS(), 0o644) // sasl.oauthbearer.jwks.endpoint.url=file://...
//	tok, _ := iss.Token("alice", "kafka", time.Hour)
type Issuer struct {
	KID, Alg string
	// Name is the iss claim of Token.
	Name string
	key  crypto.Signer
}

// NewIssuer makes a fresh key for alg RS256 (2048-bit RSA) or ES256.
func NewIssuer(kid, alg string) (*Issuer, error) {
	var key crypto.Signer
	var err error
	switch alg {
	case "RS256":
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		return nil, fmt.Errorf("tlstest: alg %s: want RS256 or ES256", alg)
	}
	if err != nil {
		return nil, err
	}
	return &Issuer{KID: kid, Alg: alg, Name: "https://issuer.test", key: key}, nil
}

// JWK is the issuer's public key as one JSON Web Key.
func (i *Issuer) JWK() map[string]string {
	b64 := base64.RawURLEncoding.EncodeToString
	switch k := i.key.Public().(type) {
	case *rsa.PublicKey:
		return map[string]string{"kty": "RSA", "use": "sig", "alg": i.Alg, "kid": i.KID, "n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
	case *ecdsa.PublicKey:
		pt, _ := k.Bytes() // 0x04 || x || y
		return map[string]string{"kty": "EC", "use": "sig", "alg": i.Alg, "kid": i.KID, "crv": "P-256", "x": b64(pt[1:33]), "y": b64(pt[33:])}
	}
	return nil
}

// JWKS is a key set of the given issuers' keys.
func JWKS(issuers ...*Issuer) []byte {
	keys := []map[string]string{}
	for _, i := range issuers {
		keys = append(keys, i.JWK())
	}
	b, _ := json.Marshal(map[string]any{"keys": keys})
	return b
}

// Token signs a token for subject sub with audience aud, issued now and
// expiring after ttl (negative: already expired).
func (i *Issuer) Token(sub, aud string, ttl time.Duration) (string, error) {
	now := time.Now()
	return i.Sign(map[string]any{"sub": sub, "aud": aud, "iss": i.Name, "iat": now.Unix(), "exp": now.Add(ttl).Unix(), "scope": "kafka"})
}

// Sign signs any claims.
func (i *Issuer) Sign(claims map[string]any) (string, error) {
	m := jwt.GetSigningMethod(i.Alg)
	t := jwt.NewWithClaims(m, jwt.MapClaims(claims))
	t.Header["kid"] = i.KID
	return t.SignedString(i.key)
}

// Unsecured is an unsigned token (alg none), for Kafka's default
// unsecured validator.
func Unsecured(claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "none"})
	c, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c) + "."
}
