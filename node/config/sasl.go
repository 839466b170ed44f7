package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-log/sluice/node/sasl"
)

// ListenerSASL is the SASL of one SASL_PLAINTEXT or SASL_SSL listener,
// built at Load from sasl.enabled.mechanisms and the listener's JAAS
// configurations (listener.name.<l>.<mechanism>.sasl.jaas.config).
type ListenerSASL struct {
	// Mechanisms are the enabled mechanisms, in the order given.
	Mechanisms []string
	// Plain are PLAIN's users: the user_<name>="password" options of
	// the listener's plain.sasl.jaas.config.
	Plain sasl.Plain
	// Username and Password are the broker's own credentials for
	// mechanism Mechanism, when this listener is the inter-broker one
	// (the username and password options of the JAAS configuration of
	// sasl.mechanism.inter.broker.protocol); empty otherwise.
	Mechanism, Username, Password string
	// OAuth validates OAUTHBEARER tokens when it is enabled (oauth.go).
	OAuth *OAuthBearer
}

// saslMechanisms are the mechanisms Sluice serves.
var saslMechanisms = []string{sasl.MechanismPlain, sasl.MechanismScramSHA256, sasl.MechanismScramSHA512, sasl.MechanismOAuthBearer}

// saslKeys are the SASL keys without a listener prefix.
var saslKeys = []key{
	{"sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "SASL mechanisms of SASL_PLAINTEXT and SASL_SSL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (sasl.oauthbearer.*; Kafka's default, GSSAPI, is not served); listener.name.<l>.sasl.enabled.mechanisms for one listener", func(c *Config, v string) error {
		c.saslMechanisms = v
		return nil
	}},
	{"sasl.mechanism.inter.broker.protocol", "", "the mechanism brokers authenticate with on a SASL inter-broker listener (default: the first enabled there), with the username and password of its JAAS configuration", func(c *Config, v string) error {
		c.SASLInterBrokerMechanism = strings.ToUpper(strings.TrimSpace(v))
		return nil
	}},
	{"connection.failed.authentication.delay.ms", "100", "delay the answer and the close of a failed SASL authentication this long", func(c *Config, v string) error {
		return parseMs(&c.FailedAuthenticationDelay, v, 0)
	}},
	{"connections.max.reauth.ms", "0", "SASL session lifetime (KIP-368): a connection must re-authenticate within it or is closed; 0: sessions last as long as their connection", func(c *Config, v string) error {
		return parseMs(&c.ConnectionsMaxReauth, v, 0)
	}},
}

// saslOverride splits listener.name.<listener>.sasl.enabled.mechanisms
// and listener.name.<listener>.<mechanism>.sasl.jaas.config (rest is
// the name after "listener.name.", lower case) into the upper-cased
// listener and the key as stored in the overrides:
// sasl.enabled.mechanisms or <MECHANISM>.sasl.jaas.config.
func saslOverride(rest string) (listener, k string, ok bool) {
	if l, ok := strings.CutSuffix(rest, ".sasl.enabled.mechanisms"); ok && l != "" {
		return strings.ToUpper(l), "sasl.enabled.mechanisms", true
	}
	if l, ok := strings.CutSuffix(rest, ".oauthbearer.sasl.server.callback.handler.class"); ok && l != "" {
		return strings.ToUpper(l), oauthHandlerKey, true
	}
	if lm, ok := strings.CutSuffix(rest, ".sasl.jaas.config"); ok {
		if i := strings.LastIndexByte(lm, '.'); i > 0 {
			return strings.ToUpper(lm[:i]), strings.ToUpper(lm[i+1:]) + ".sasl.jaas.config", true
		}
	}
	return "", "", false
}

// envSASLOverride is saslOverride for SLUICE_LISTENER_NAME_<L>_SASL_ENABLED_MECHANISMS
// and SLUICE_LISTENER_NAME_<L>_<MECHANISM>_SASL_JAAS_CONFIG (the
// mechanism's '-' as '_': SCRAM_SHA_256); rest follows the prefix.
func envSASLOverride(rest string) (listener, k string, ok bool) {
	if l, ok := strings.CutSuffix(rest, "_SASL_ENABLED_MECHANISMS"); ok && l != "" {
		return l, "sasl.enabled.mechanisms", true
	}
	if l, ok := strings.CutSuffix(rest, "_OAUTHBEARER_SASL_SERVER_CALLBACK_HANDLER_CLASS"); ok && l != "" {
		return l, oauthHandlerKey, true
	}
	for _, m := range saslMechanisms {
		if l, ok := strings.CutSuffix(rest, "_"+strings.ReplaceAll(m, "-", "_")+"_SASL_JAAS_CONFIG"); ok && l != "" {
			return l, m + ".sasl.jaas.config", true
		}
	}
	return "", "", false
}

// isSASLKey says an override key is one of saslOverride's.
func isSASLKey(k string) bool {
	return k == "sasl.enabled.mechanisms" || k == oauthHandlerKey || strings.HasSuffix(k, ".sasl.jaas.config")
}

// saslListeners are the names of the Kafka listeners mapped to
// SASL_PLAINTEXT or SASL_SSL.
func (c *Config) saslListeners() []string {
	var out []string
	for _, l := range c.KafkaListeners {
		if p := c.SecurityProtocols[l.Name]; p == "SASL_PLAINTEXT" || p == "SASL_SSL" {
			out = append(out, l.Name)
		}
	}
	return out
}

// buildSASL builds the SASL of listener name from the overrides.
func (c *Config) buildSASL(name string) (*ListenerSASL, error) {
	fail := func(k, format string, a ...any) error {
		return fmt.Errorf("%w: listener %s (%s): %s: %s", ErrInvalid, name, c.SecurityProtocols[name], k, fmt.Sprintf(format, a...))
	}
	over := c.sslOverrides[name]
	mechs, mechsKey := c.saslMechanisms, "sasl.enabled.mechanisms"
	if v, ok := over["sasl.enabled.mechanisms"]; ok {
		mechs, mechsKey = v, "listener.name."+strings.ToLower(name)+".sasl.enabled.mechanisms"
	}
	s := &ListenerSASL{}
	for _, m := range strings.Split(mechs, ",") {
		m = strings.ToUpper(strings.TrimSpace(m))
		switch {
		case m == "":
		case !slices.Contains(saslMechanisms, m):
			return nil, fail(mechsKey, "%q is not served: Sluice serves %s", m, strings.Join(saslMechanisms, ", "))
		case !slices.Contains(s.Mechanisms, m):
			s.Mechanisms = append(s.Mechanisms, m)
		}
	}
	if len(s.Mechanisms) == 0 {
		return nil, fail(mechsKey, "enable at least one of %s", strings.Join(saslMechanisms, ", "))
	}
	jaas := map[string]sasl.JAAS{}
	for k, v := range over {
		m, ok := strings.CutSuffix(k, ".sasl.jaas.config")
		if !ok {
			continue
		}
		jk := "listener.name." + strings.ToLower(name) + "." + strings.ToLower(m) + ".sasl.jaas.config"
		if !slices.Contains(s.Mechanisms, m) {
			return nil, fail(jk, "%s is not enabled on this listener (%s)", m, mechsKey)
		}
		j, err := sasl.ParseJAAS(v)
		if err != nil {
			return nil, fail(jk, "%v", err)
		}
		want := sasl.ScramLoginModule
		switch m {
		case sasl.MechanismPlain:
			want = sasl.PlainLoginModule
		case sasl.MechanismOAuthBearer:
			want = sasl.OAuthBearerLoginModule
		}
		if j.LoginModule != want {
			return nil, fail(jk, "login module %s: %s takes %s", j.LoginModule, m, want)
		}
		jaas[m] = j
	}
	if slices.Contains(s.Mechanisms, sasl.MechanismPlain) {
		j, ok := jaas[sasl.MechanismPlain]
		if !ok {
			return nil, fail("listener.name."+strings.ToLower(name)+".plain.sasl.jaas.config",
				`PLAIN is enabled but has no users: set it to %s required user_<name>="<password>" ...; (or disable PLAIN in %s)`, sasl.PlainLoginModule, mechsKey)
		}
		s.Plain = j.PlainUsers()
	}
	if slices.Contains(s.Mechanisms, sasl.MechanismOAuthBearer) {
		var err error
		if s.OAuth, err = c.buildOAuth(name, jaas[sasl.MechanismOAuthBearer], fail); err != nil {
			return nil, err
		}
	} else if _, ok := over[oauthHandlerKey]; ok {
		return nil, fail("listener.name."+strings.ToLower(name)+".oauthbearer.sasl.server.callback.handler.class", "OAUTHBEARER is not enabled on this listener (%s)", mechsKey)
	}
	if name == c.InterBrokerListener {
		m := c.SASLInterBrokerMechanism
		if m == "" {
			m = s.Mechanisms[0]
		}
		if !slices.Contains(s.Mechanisms, m) {
			return nil, fail("sasl.mechanism.inter.broker.protocol", "%s is not enabled on the inter-broker listener (%s: %s)", m, mechsKey, strings.Join(s.Mechanisms, ","))
		}
		if m == sasl.MechanismOAuthBearer {
			return nil, fail("sasl.mechanism.inter.broker.protocol", "brokers do not fetch OAUTHBEARER tokens for themselves: set PLAIN or SCRAM-SHA-256/512 for the inter-broker listener (enable it beside OAUTHBEARER)")
		}
		j := jaas[m]
		s.Mechanism, s.Username, s.Password = m, j.Options["username"], j.Options["password"]
		if s.Username == "" || s.Password == "" {
			return nil, fail("listener.name."+strings.ToLower(name)+"."+strings.ToLower(m)+".sasl.jaas.config",
				"the inter-broker listener's %s JAAS configuration needs username and password: the broker's own credentials for replica fetches", m)
		}
	}
	return s, nil
}
