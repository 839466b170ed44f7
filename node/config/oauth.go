package config

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-log/sluice/node/sasl"
)

// OAuthBearer is how a listener validates OAUTHBEARER tokens (KIP-255,
// KIP-768), from the broker's sasl.oauthbearer.* keys and the listener's
// OAUTHBEARER JAAS configuration.
type OAuthBearer struct {
	// JWKSURL (sasl.oauthbearer.jwks.endpoint.url) is where the issuer's
	// public keys are: https:// or file://. Empty: Kafka's default
	// unsecured validator (alg none tokens), for tests only.
	JWKSURL *url.URL
	// JWKSRefresh (sasl.oauthbearer.jwks.endpoint.refresh.ms) rereads
	// the key set; a token with an unknown kid rereads it sooner, at most
	// every JWKSRetryBackoff, doubling to JWKSRetryBackoffMax while
	// fetches fail (sasl.oauthbearer.jwks.endpoint.retry.backoff.ms and
	// .max.ms).
	JWKSRefresh, JWKSRetryBackoff, JWKSRetryBackoffMax time.Duration
	// JWKSTrustStore (sluice.sasl.oauthbearer.jwks.endpoint.ssl.truststore.location):
	// PEM CA certificates for an https JWKS endpoint; empty: the system's.
	JWKSTrustStore string
	// The claims: Audience (sasl.oauthbearer.expected.audience), Issuer
	// (sasl.oauthbearer.expected.issuer), the principal and scope claim
	// names (sasl.oauthbearer.sub.claim.name, .scope.claim.name), the
	// clock skew allowed (sasl.oauthbearer.clock.skew.seconds).
	Audience             []string
	Issuer               string
	SubClaim, ScopeClaim string
	ClockSkew            time.Duration
	// RequiredScope is the unsecured validator's
	// unsecuredValidatorRequiredScope (JAAS option; space-separated).
	RequiredScope []string
}

// Unsecured says tokens are not verified (no JWKS URL).
func (o *OAuthBearer) Unsecured() bool { return o.JWKSURL == nil }

// Validator is the node/sasl validator of these settings, with keys
// (nil when Unsecured).
func (o *OAuthBearer) Validator(keys sasl.Keys) *sasl.OAuthValidator {
	return &sasl.OAuthValidator{Keys: keys, Audience: o.Audience, Issuer: o.Issuer, SubClaim: o.SubClaim,
		ScopeClaim: o.ScopeClaim, RequiredScope: o.RequiredScope, ClockSkew: o.ClockSkew}
}

// Handler classes of listener.name.<l>.oauthbearer.sasl.server.callback.handler.class.
const (
	oauthValidatorHandler          = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	oauthUnsecuredValidatorHandler = "org.apache.kafka.common.security.oauthbearer.OAuthBearerUnsecuredValidatorCallbackHandler"
)

// oauthKeys are the broker's sasl.oauthbearer.* keys.
var oauthKeys = []key{
	{"sasl.oauthbearer.jwks.endpoint.url", "", "the token issuer's JWKS (https:// or file://): OAUTHBEARER tokens must be signed by one of its keys; empty: Kafka's default unsecured tokens (alg none), never for production", func(c *Config, v string) error {
		if v = strings.TrimSpace(v); v == "" {
			return nil
		}
		u, err := url.Parse(v)
		if err != nil {
			return err
		}
		switch {
		case u.Scheme == "https" && u.Host != "":
		case u.Scheme == "file" && u.Path != "":
		default:
			return fmt.Errorf("%q: want https://host/path or file:///path (plain http would let anyone on the path swap the keys)", v)
		}
		c.OAuthBearer.JWKSURL = u
		return nil
	}},
	{"sasl.oauthbearer.jwks.endpoint.refresh.ms", "3600000", "reread the JWKS this often", func(c *Config, v string) error {
		return parseMs(&c.OAuthBearer.JWKSRefresh, v, 1)
	}},
	{"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "100", "the first wait before fetching the JWKS again after a failure or an unknown key id", func(c *Config, v string) error {
		return parseMs(&c.OAuthBearer.JWKSRetryBackoff, v, 0)
	}},
	{"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", "10000", "the longest wait between JWKS fetches while they fail", func(c *Config, v string) error {
		return parseMs(&c.OAuthBearer.JWKSRetryBackoffMax, v, 0)
	}},
	{"sluice.sasl.oauthbearer.jwks.endpoint.ssl.truststore.location", "", "PEM CA certificates to trust for an https JWKS endpoint; empty: the system's", func(c *Config, v string) error {
		c.OAuthBearer.JWKSTrustStore = strings.TrimSpace(v)
		return nil
	}},
	{"sasl.oauthbearer.expected.audience", "", "comma-separated: a token's aud claim must name one of them; empty: not checked", func(c *Config, v string) error {
		c.OAuthBearer.Audience = nil
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				c.OAuthBearer.Audience = append(c.OAuthBearer.Audience, a)
			}
		}
		return nil
	}},
	{"sasl.oauthbearer.expected.issuer", "", "a token's iss claim must be this; empty: not checked", func(c *Config, v string) error {
		c.OAuthBearer.Issuer = strings.TrimSpace(v)
		return nil
	}},
	{"sasl.oauthbearer.sub.claim.name", "sub", "the claim holding the principal name (User:<value>)", func(c *Config, v string) error {
		if c.OAuthBearer.SubClaim = strings.TrimSpace(v); c.OAuthBearer.SubClaim == "" {
			return fmt.Errorf("name the claim, e.g. sub")
		}
		return nil
	}},
	{"sasl.oauthbearer.scope.claim.name", "scope", "the claim holding the token's scope", func(c *Config, v string) error {
		if c.OAuthBearer.ScopeClaim = strings.TrimSpace(v); c.OAuthBearer.ScopeClaim == "" {
			return fmt.Errorf("name the claim, e.g. scope")
		}
		return nil
	}},
	{"sasl.oauthbearer.clock.skew.seconds", "30", "the difference allowed between the broker's clock and the issuer's on exp, iat and nbf", func(c *Config, v string) error {
		s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || s < 0 || s > math.MaxInt32 {
			return fmt.Errorf("%q: want whole seconds, 0 or more", v)
		}
		c.OAuthBearer.ClockSkew = time.Duration(s) * time.Second
		return nil
	}},
}

// buildOAuth builds the OAUTHBEARER settings of a listener: the broker's,
// with the listener's callback handler class and, for unsecured tokens,
// its JAAS options (Kafka's unsecuredValidator* names).
func (c *Config) buildOAuth(name string, jaas sasl.JAAS, fail func(k, format string, a ...any) error) (*OAuthBearer, error) {
	o := c.OAuthBearer
	prefix := "listener.name." + strings.ToLower(name) + ".oauthbearer."
	switch h := strings.TrimSpace(c.sslOverrides[name][oauthHandlerKey]); h {
	case "":
	case oauthValidatorHandler:
		if o.JWKSURL == nil {
			return nil, fail(prefix+"sasl.server.callback.handler.class", "%s verifies tokens against sasl.oauthbearer.jwks.endpoint.url: set it", h)
		}
	case oauthUnsecuredValidatorHandler:
		o.JWKSURL = nil
	default:
		return nil, fail(prefix+"sasl.server.callback.handler.class", "%q: Sluice serves %s and %s", h, oauthValidatorHandler, oauthUnsecuredValidatorHandler)
	}
	if o.JWKSURL != nil {
		return &o, nil
	}
	// Kafka's unsecured validator takes its claims from the JAAS options.
	o.Audience, o.Issuer, o.SubClaim, o.ScopeClaim, o.ClockSkew = nil, "", "sub", "scope", 0
	if v := jaas.Options["unsecuredValidatorPrincipalClaimName"]; v != "" {
		o.SubClaim = v
	}
	if v := jaas.Options["unsecuredValidatorScopeClaimName"]; v != "" {
		o.ScopeClaim = v
	}
	o.RequiredScope = strings.Fields(jaas.Options["unsecuredValidatorRequiredScope"])
	if v := jaas.Options["unsecuredValidatorAllowableClockSkewMs"]; v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 {
			return nil, fail(prefix+"sasl.jaas.config", "unsecuredValidatorAllowableClockSkewMs=%q: want milliseconds, 0 or more", v)
		}
		o.ClockSkew = time.Duration(ms) * time.Millisecond
	}
	return &o, nil
}

// oauthHandlerKey is listener.name.<l>.oauthbearer.sasl.server.callback.handler.class
// as stored in the overrides.
const oauthHandlerKey = "OAUTHBEARER.sasl.server.callback.handler.class"
