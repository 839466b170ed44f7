package config

import (
	"strings"
	"testing"
	"time"
)

const oauthListeners = "listeners=INTERNAL://127.0.0.1:9092,EXTERNAL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093\n" +
	"listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n" +
	"inter.broker.listener.name=INTERNAL\n"

// TestOAuthBearerConfig: Kafka's sasl.oauthbearer.* keys and the
// listener's handler class build a JWKS validator; without a JWKS URL the
// listener gets Kafka's default unsecured validator with its JAAS
// options.
func TestOAuthBearerConfig(t *testing.T) {
	c, err := load(t, minimal+oauthListeners+
		"listener.name.external.sasl.enabled.mechanisms=OAUTHBEARER\n"+
		"sasl.oauthbearer.jwks.endpoint.url=https://idp.example/keys\n"+
		"sasl.oauthbearer.expected.audience=kafka, other\n"+
		"sasl.oauthbearer.expected.issuer=https://idp.example\n"+
		"sasl.oauthbearer.sub.claim.name=client_id\n"+
		"sasl.oauthbearer.clock.skew.seconds=5\n"+
		"listener.name.external.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	o := c.SASL["EXTERNAL"].OAuth
	if o == nil || o.Unsecured() || o.JWKSURL.String() != "https://idp.example/keys" || strings.Join(o.Audience, ",") != "kafka,other" ||
		o.Issuer != "https://idp.example" || o.SubClaim != "client_id" || o.ScopeClaim != "scope" || o.ClockSkew != 5*time.Second ||
		o.JWKSRefresh != time.Hour || o.JWKSRetryBackoff != 100*time.Millisecond || o.JWKSRetryBackoffMax != 10*time.Second {
		t.Fatalf("%+v", o)
	}
	c, err = load(t, minimal+oauthListeners+"listener.name.external.sasl.enabled.mechanisms=OAUTHBEARER\n",
		[]string{`SLUICE_LISTENER_NAME_EXTERNAL_OAUTHBEARER_SASL_JAAS_CONFIG=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="a b" unsecuredValidatorAllowableClockSkewMs="1500";`})
	if err != nil {
		t.Fatal(err)
	}
	if o := c.SASL["EXTERNAL"].OAuth; o == nil || !o.Unsecured() || strings.Join(o.RequiredScope, ",") != "a,b" || o.ClockSkew != 1500*time.Millisecond || o.SubClaim != "sub" {
		t.Fatalf("unsecured %+v", o)
	}
}

// TestOAuthBearerConfigErrors: each mistake is refused at Load, naming the key.
func TestOAuthBearerConfigErrors(t *testing.T) {
	on := oauthListeners + "listener.name.external.sasl.enabled.mechanisms=OAUTHBEARER\n"
	for _, tc := range []struct{ name, file, err string }{
		{"http url", on + "sasl.oauthbearer.jwks.endpoint.url=http://idp/keys\n", "sasl.oauthbearer.jwks.endpoint.url"},
		{"no path", on + "sasl.oauthbearer.jwks.endpoint.url=file://\n", "file:///path"},
		{"skew", on + "sasl.oauthbearer.clock.skew.seconds=-1\n", "sasl.oauthbearer.clock.skew.seconds"},
		{"validator without url", on + "listener.name.external.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler\n", "set it"},
		{"unknown handler", on + "listener.name.external.oauthbearer.sasl.server.callback.handler.class=com.example.Mine\n", "Sluice serves"},
		{"handler without the mechanism", oauthListeners + "listener.name.external.sasl.enabled.mechanisms=SCRAM-SHA-256\nlistener.name.external.oauthbearer.sasl.server.callback.handler.class=x\n", "OAUTHBEARER is not enabled"},
		{"wrong module", on + "listener.name.external.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required;\n", "OAUTHBEARER takes org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"},
		{"inter-broker", strings.Replace(on, "inter.broker.listener.name=INTERNAL", "inter.broker.listener.name=EXTERNAL", 1), "brokers do not fetch OAUTHBEARER tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, minimal+tc.file, nil)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.err)
			}
		})
	}
}

// TestNodePrincipalPattern: sluice.node.principal.pattern names each
// node's principal; a pattern without {id} or User: is refused.
func TestNodePrincipalPattern(t *testing.T) {
	c, err := load(t, minimal+"sluice.node.principal.pattern=User:node-{id}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.NodePrincipalOf(3); got != "User:node-3" {
		t.Fatalf("node 3: %q", got)
	}
	c, err = load(t, minimal, nil)
	if err != nil || c.NodePrincipalOf(3) != "" {
		t.Fatalf("unset: %q %v", c.NodePrincipalOf(3), err)
	}
	for _, bad := range []string{"node-{id}", "User:node", "User:{id}-{id}"} {
		if _, err := load(t, minimal+"sluice.node.principal.pattern="+bad+"\n", nil); err == nil || !strings.Contains(err.Error(), "sluice.node.principal.pattern") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
