package sasl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// MechanismOAuthBearer is KIP-255's mechanism (RFC 7628).
const MechanismOAuthBearer = "OAUTHBEARER"

// OAuthBearerLoginModule is the login module class of OAUTHBEARER's JAAS
// configuration.
const OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"

// ErrInvalidToken: a bearer token that does not validate (signature,
// expiry, audience, issuer, subject, scope). The client is told only
// RFC 7628's status, then SASL_AUTHENTICATION_FAILED; the error says why
// in the broker's log.
var ErrInvalidToken = errors.New("invalid OAUTHBEARER token")

// OAuthBearerMessage is an OAUTHBEARER client initial response (RFC 7628
// §3.1): `n,[a=authzid],` ^A `auth=Bearer <token>` ^A [key=value ^A ...] ^A.
type OAuthBearerMessage struct {
	AuthzID    string
	Token      string
	Extensions map[string]string
}

// ParseOAuthBearer parses a client initial response as Kafka's
// OAuthBearerClientInitialResponse does: GS2 header without channel
// binding ("n" or "y"), an optional authorization id, then key=value
// pairs, each ended by ^A, the last followed by one more ^A. auth is
// required and is "Bearer" (any case), spaces, then a token of
// [-_.a-zA-Z0-9]; extension keys are letters and their values printable.
func ParseOAuthBearer(b []byte) (OAuthBearerMessage, error) {
	var m OAuthBearerMessage
	bad := func(format string, a ...any) (OAuthBearerMessage, error) {
		return OAuthBearerMessage{}, fmt.Errorf("%w: %w: OAUTHBEARER: %s", ErrAuthenticationFailed, ErrBadMessage, fmt.Sprintf(format, a...))
	}
	s := string(b)
	if !strings.HasPrefix(s, "n,") && !strings.HasPrefix(s, "y,") {
		return bad("the GS2 header must start with n, or y, (no channel binding)")
	}
	s = s[2:]
	if rest, ok := strings.CutPrefix(s, "a="); ok {
		i := strings.IndexByte(rest, ',')
		if i < 0 {
			return bad("unterminated authorization id")
		}
		m.AuthzID, s = rest[:i], rest[i:]
	}
	s, ok := strings.CutPrefix(s, ",\x01")
	if !ok {
		return bad("the GS2 header must end with ,^A")
	}
	s, ok = strings.CutSuffix(s, "\x01")
	if !ok {
		return bad("the message must end with ^A^A")
	}
	for s != "" {
		i := strings.IndexByte(s, '\x01')
		if i < 0 {
			return bad("a key=value pair is not ended by ^A")
		}
		kv := s[:i]
		s = s[i+1:]
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.IndexFunc(k, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') }) >= 0 {
			return bad("bad key in %q", kv)
		}
		if k == "auth" {
			if m.Token != "" {
				return bad("auth given twice")
			}
			scheme, tok, ok := strings.Cut(v, " ")
			tok = strings.TrimLeft(tok, " ")
			if !ok || !strings.EqualFold(scheme, "bearer") || tok == "" || strings.IndexFunc(tok, func(r rune) bool {
				return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_' || r == '.')
			}) >= 0 {
				return bad("auth must be \"Bearer <token>\"")
			}
			m.Token = tok
			continue
		}
		if v == "" || strings.IndexFunc(v, func(r rune) bool { return (r < 0x21 || r > 0x7e) && r != ' ' && r != '\t' && r != '\r' && r != '\n' }) >= 0 {
			return bad("extension %s: value must be printable ASCII", k)
		}
		if m.Extensions == nil {
			m.Extensions = map[string]string{}
		}
		if _, dup := m.Extensions[k]; dup {
			return bad("extension %s given twice", k)
		}
		m.Extensions[k] = v
	}
	if m.Token == "" {
		return bad("no auth=Bearer <token>")
	}
	return m, nil
}

// Keys finds the key that verifies a JWS: by its key id (kid) when the
// header has one. A JWKS implements it; a fetched, refreshed one is
// behind a function (KeysFunc). Called concurrently.
type Keys interface {
	Key(kid, alg string) (any, error)
}

// KeysFunc is a function as Keys.
type KeysFunc func(kid, alg string) (any, error)

// Key implements Keys.
func (f KeysFunc) Key(kid, alg string) (any, error) { return f(kid, alg) }

// OAuthValidator validates bearer tokens as Kafka's broker-side
// validators do. Read-only once in use; safe for concurrent use.
type OAuthValidator struct {
	// Keys verifies signed tokens (KIP-768's
	// OAuthBearerValidatorCallbackHandler: sasl.oauthbearer.jwks.endpoint.url).
	// Nil: unsecured JWS (Kafka's default
	// OAuthBearerUnsecuredValidatorCallbackHandler): alg "none" and an
	// empty signature only; for tests and trusted networks.
	Keys Keys
	// Audience (sasl.oauthbearer.expected.audience): when set, the aud
	// claim must name one of them. Issuer
	// (sasl.oauthbearer.expected.issuer): when set, iss must equal it.
	Audience []string
	Issuer   string
	// SubClaim names the claim holding the principal name
	// (sasl.oauthbearer.sub.claim.name, or the unsecured validator's
	// unsecuredValidatorPrincipalClaimName; default "sub"), ScopeClaim
	// the scope (sasl.oauthbearer.scope.claim.name,
	// unsecuredValidatorScopeClaimName; default "scope").
	SubClaim, ScopeClaim string
	// RequiredScope (unsecuredValidatorRequiredScope): every one must be
	// in the token's scope.
	RequiredScope []string
	// ClockSkew (sasl.oauthbearer.clock.skew.seconds, default 30 s;
	// unsecuredValidatorAllowableClockSkewMs, default 0) is allowed
	// between the broker's clock and the issuer's on exp, nbf and iat.
	ClockSkew time.Duration
}

// OAuthToken is a validated bearer token.
type OAuthToken struct {
	// Principal is the subject claim's value (User:<Principal>).
	Principal string
	// Expiry is the exp claim: the session lasts until then (KIP-368).
	Expiry time.Time
	Scope  []string
}

// signedAlgs are the JWS algorithms of signed tokens (jose4j's, less
// the HMAC ones: a JWKS publishes public keys).
var signedAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}

// Validate checks token at now and returns what it says. Its errors wrap
// ErrInvalidToken and say why.
func (v *OAuthValidator) Validate(token string, now time.Time) (OAuthToken, error) {
	claims, err := v.verify(token)
	if err != nil {
		return OAuthToken{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	t, err := v.check(claims, now)
	if err != nil {
		return OAuthToken{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	return t, nil
}

// verify checks the token's form and signature and returns its claims.
func (v *OAuthValidator) verify(token string) (map[string]any, error) {
	if v.Keys == nil {
		return unsecuredClaims(token)
	}
	p := jwt.NewParser(jwt.WithValidMethods(signedAlgs), jwt.WithoutClaimsValidation(), jwt.WithJSONNumber())
	claims := jwt.MapClaims{}
	_, err := p.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		return v.Keys.Key(kid, t.Method.Alg())
	})
	if err != nil {
		return nil, err
	}
	return claims, nil
}

// unsecuredClaims reads an unsecured JWS (RFC 7515 with alg "none"):
// header.payload. with an empty signature, as Kafka's OAuthBearerUnsecuredJws.
func unsecuredClaims(token string) (map[string]any, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("a JWS has three dot-separated parts, this token %d", len(parts))
	}
	if parts[2] != "" {
		return nil, errors.New("the token is signed, but this listener validates unsecured tokens only (alg none): set sasl.oauthbearer.jwks.endpoint.url to verify signatures")
	}
	var header map[string]any
	if err := decodeSegment(parts[0], &header); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if alg, _ := header["alg"].(string); alg != "none" {
		return nil, fmt.Errorf("unsecured token with alg %q: want none", alg)
	}
	claims := map[string]any{}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return nil, fmt.Errorf("claims: %w", err)
	}
	return claims, nil
}

// decodeSegment decodes one base64url (unpadded) JSON part of a JWS.
func decodeSegment(s string, out any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(out)
}

// check validates the claims as Kafka's validators do: exp required and
// not past (less the skew), iat required for signed tokens and not in the
// future (plus the skew), nbf not in the future, the audience and issuer
// when expected, a non-empty subject, the scope when required.
func (v *OAuthValidator) check(claims map[string]any, now time.Time) (OAuthToken, error) {
	var t OAuthToken
	exp, ok, err := numericDate(claims, "exp")
	if err != nil {
		return t, err
	}
	if !ok {
		return t, errors.New("no exp claim: tokens must expire")
	}
	if !now.Before(exp.Add(v.ClockSkew)) {
		return t, fmt.Errorf("expired at %s (now %s, clock skew %s)", exp.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), v.ClockSkew)
	}
	t.Expiry = exp
	iat, ok, err := numericDate(claims, "iat")
	if err != nil {
		return t, err
	}
	if !ok && v.Keys != nil {
		return t, errors.New("no iat claim")
	}
	if ok && iat.After(now.Add(v.ClockSkew)) {
		return t, fmt.Errorf("issued in the future, at %s (now %s, clock skew %s)", iat.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), v.ClockSkew)
	}
	if ok && exp.Before(iat) {
		return t, errors.New("expires before it was issued")
	}
	if nbf, ok, err := numericDate(claims, "nbf"); err != nil {
		return t, err
	} else if ok && nbf.After(now.Add(v.ClockSkew)) {
		return t, fmt.Errorf("not valid before %s (now %s)", nbf.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if len(v.Audience) > 0 {
		aud, err := stringList(claims, "aud")
		if err != nil {
			return t, err
		}
		if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(v.Audience, a) }) {
			return t, fmt.Errorf("audience %q is none of sasl.oauthbearer.expected.audience %q", aud, v.Audience)
		}
	}
	if v.Issuer != "" {
		if iss, _ := claims["iss"].(string); iss != v.Issuer {
			return t, fmt.Errorf("issuer %q is not sasl.oauthbearer.expected.issuer %q", iss, v.Issuer)
		}
	}
	subClaim := cmpOr(v.SubClaim, "sub")
	sub, _ := claims[subClaim].(string)
	if strings.TrimSpace(sub) == "" {
		return t, fmt.Errorf("no principal: claim %q is missing, empty or not a string (sasl.oauthbearer.sub.claim.name)", subClaim)
	}
	t.Principal = sub
	scopeClaim := cmpOr(v.ScopeClaim, "scope")
	if s, ok := claims[scopeClaim].(string); ok {
		t.Scope = strings.Fields(s)
	} else if claims[scopeClaim] != nil {
		if t.Scope, err = stringList(claims, scopeClaim); err != nil {
			return t, err
		}
	}
	for _, want := range v.RequiredScope {
		if !slices.Contains(t.Scope, want) {
			return t, fmt.Errorf("%w: scope %q lacks %q", errInsufficientScope, t.Scope, want)
		}
	}
	return t, nil
}

// errInsufficientScope marks a scope failure (RFC 7628's insufficient_scope).
var errInsufficientScope = errors.New("insufficient scope")

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// numericDate reads claim name as seconds since the epoch (RFC 7519
// NumericDate, fractions allowed).
func numericDate(claims map[string]any, name string) (time.Time, bool, error) {
	raw, ok := claims[name]
	if !ok || raw == nil {
		return time.Time{}, false, nil
	}
	var f float64
	switch n := raw.(type) {
	case json.Number:
		var err error
		if f, err = n.Float64(); err != nil {
			return time.Time{}, false, fmt.Errorf("claim %s: %v", name, err)
		}
	case float64:
		f = n
	default:
		return time.Time{}, false, fmt.Errorf("claim %s is not a number", name)
	}
	if math.IsNaN(f) || f < 0 || f > 1<<40 {
		return time.Time{}, false, fmt.Errorf("claim %s: %v is not a date", name, f)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true, nil
}

// stringList reads a claim that is a string or an array of strings.
func stringList(claims map[string]any, name string) ([]string, error) {
	switch x := claims[name].(type) {
	case nil:
		return nil, nil
	case string:
		return []string{x}, nil
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("claim %s holds a non-string", name)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("claim %s is not a string or a list of strings", name)
}

// OAuthServer runs one OAUTHBEARER exchange, as Kafka's
// OAuthBearerSaslServer: the client's initial response carries the
// token; a valid one ends the exchange with an empty answer, an invalid
// one is answered with RFC 7628's error status ({"status":"invalid_token"})
// and the client's next message (^A) fails the exchange.
type OAuthServer struct {
	v      *OAuthValidator
	now    func() time.Time
	failed error
	token  OAuthToken
}

// NewOAuthServer starts an exchange validated by v at the times now gives.
func NewOAuthServer(v *OAuthValidator, now func() time.Time) *OAuthServer {
	return &OAuthServer{v: v, now: now}
}

// Token is the validated token once Step reported done.
func (s *OAuthServer) Token() OAuthToken { return s.token }

// Step takes one client message and returns the server's answer, whether
// the client is authenticated, or an error (wrapping
// ErrAuthenticationFailed) that ends the exchange.
func (s *OAuthServer) Step(msg []byte) (answer []byte, done bool, err error) {
	if s.failed != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrAuthenticationFailed, s.failed)
	}
	m, err := ParseOAuthBearer(msg)
	if err != nil {
		return nil, false, err
	}
	t, err := s.v.Validate(m.Token, s.now())
	if err != nil {
		s.failed = err
		status := `{"status":"invalid_token"}`
		if errors.Is(err, errInsufficientScope) {
			b, _ := json.Marshal(map[string]string{"status": "insufficient_scope", "scope": strings.Join(s.v.RequiredScope, " ")})
			status = string(b)
		}
		return []byte(status), false, nil
	}
	if m.AuthzID != "" && m.AuthzID != t.Principal {
		return nil, false, fmt.Errorf("%w: authorization id %q is not the token's principal %q", ErrAuthenticationFailed, m.AuthzID, t.Principal)
	}
	s.token = t
	return []byte{}, true, nil
}
