package config

import (
	"strings"
	"testing"
)

const saslListeners = "listeners=INTERNAL://127.0.0.1:9092,EXTERNAL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093\n" +
	"listener.security.protocol.map=INTERNAL:SASL_PLAINTEXT,EXTERNAL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n" +
	"inter.broker.listener.name=INTERNAL\n"

// TestSASLListeners: Kafka's keys build each SASL listener's mechanisms,
// PLAIN users and the broker's own inter-broker credentials; secrets are
// not in Values.
func TestSASLListeners(t *testing.T) {
	file := minimal + saslListeners +
		"sasl.enabled.mechanisms=PLAIN\n" +
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512\n" +
		"listener.name.internal.sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN\n" +
		`listener.name.internal.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";` + "\n" +
		`listener.name.internal.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \` + "\n" +
		`    user_admin="admin-secret";` + "\n"
	env := []string{`SLUICE_LISTENER_NAME_EXTERNAL_PLAIN_SASL_JAAS_CONFIG=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`}
	c, err := load(t, file, env)
	if err != nil {
		t.Fatal(err)
	}
	in, ex := c.SASL["INTERNAL"], c.SASL["EXTERNAL"]
	if in == nil || ex == nil {
		t.Fatalf("SASL %+v", c.SASL)
	}
	if strings.Join(in.Mechanisms, ",") != "SCRAM-SHA-512,PLAIN" || in.Plain["admin"] != "admin-secret" ||
		in.Mechanism != "SCRAM-SHA-512" || in.Username != "broker" || in.Password != "broker-secret" {
		t.Fatalf("INTERNAL %+v", in)
	}
	if strings.Join(ex.Mechanisms, ",") != "PLAIN" || ex.Plain["alice"] != "alice-secret" || len(ex.Plain) != 1 || ex.Username != "" {
		t.Fatalf("EXTERNAL %+v", ex)
	}
	for k, v := range c.Values {
		if strings.Contains(v, "secret") {
			t.Errorf("Values[%s] holds a secret", k)
		}
	}
}

// TestSASLConfigErrors: each mistake is refused at Load, naming the key.
func TestSASLConfigErrors(t *testing.T) {
	scram := `listener.name.internal.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="b" password="p";` + "\n"
	for _, tc := range []struct{ name, file, err string }{
		{"gssapi", saslListeners + "sasl.enabled.mechanisms=GSSAPI\n", `sasl.enabled.mechanisms: "GSSAPI" is not served`},
		{"none", saslListeners + "sasl.enabled.mechanisms=\n", "enable at least one of PLAIN"},
		{"plain without users", saslListeners + "sasl.enabled.mechanisms=PLAIN\n", "PLAIN is enabled but has no users"},
		{"bad jaas", saslListeners + "sasl.enabled.mechanisms=SCRAM-SHA-256\nlistener.name.internal.scram-sha-256.sasl.jaas.config=Foo required a=\"b;\n", "bad JAAS configuration"},
		{"wrong module", saslListeners + "sasl.enabled.mechanisms=SCRAM-SHA-256\nlistener.name.internal.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required;\n", "SCRAM-SHA-256 takes org.apache.kafka.common.security.scram.ScramLoginModule"},
		{"jaas of a disabled mechanism", saslListeners + "sasl.enabled.mechanisms=SCRAM-SHA-256\n" + scram + "listener.name.internal.scram-sha-512.sasl.jaas.config=X required;\n", "SCRAM-SHA-512 is not enabled on this listener"},
		{"inter-broker mechanism not enabled", saslListeners + "sasl.enabled.mechanisms=SCRAM-SHA-256\nsasl.mechanism.inter.broker.protocol=PLAIN\n" + scram, "PLAIN is not enabled on the inter-broker listener"},
		{"no broker credentials", saslListeners + "sasl.enabled.mechanisms=SCRAM-SHA-256\n", "needs username and password"},
		{"sasl key on a plaintext listener", "listener.name.plaintext.sasl.enabled.mechanisms=PLAIN\n", "PLAINTEXT is not a Kafka listener mapped to SASL_PLAINTEXT or SASL_SSL"},
		{"reauth", saslListeners + "sasl.enabled.mechanisms=SCRAM-SHA-256\n" + scram + "connections.max.reauth.ms=-5\n", "connections.max.reauth.ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, minimal+tc.file, nil)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.err)
			}
		})
	}
}
