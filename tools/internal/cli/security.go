package cli

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/sasl"
)

// SecurityOpts reads --command-config, a Kafka client properties file,
// as kafka-configs.sh and the other Kafka tools take it:
// security.protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL),
// sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) with the username
// and password of sasl.jaas.config, and for TLS ssl.truststore.location
// or ssl.truststore.certificates (PEM), ssl.keystore.location (a PEM
// file with the client's key and certificate, for mTLS) and
// ssl.endpoint.identification.algorithm (empty skips the host check).
func SecurityOpts(path string) ([]kgo.Opt, error) {
	if path == "" {
		return nil, nil
	}
	p, err := config.ReadProperties(path)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("--command-config %s: %s", path, fmt.Sprintf(format, a...))
	}
	proto := strings.ToUpper(p["security.protocol"])
	if proto == "" {
		proto = "PLAINTEXT"
	}
	var opts []kgo.Opt
	switch proto {
	case "PLAINTEXT", "SASL_PLAINTEXT":
	case "SSL", "SASL_SSL":
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		var pem []byte
		if loc := p["ssl.truststore.location"]; loc != "" {
			if pem, err = os.ReadFile(loc); err != nil {
				return nil, fail("ssl.truststore.location: %v", err)
			}
		} else if inline := p["ssl.truststore.certificates"]; inline != "" {
			pem = []byte(inline)
		}
		if pem != nil {
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fail("the truststore holds no PEM certificate")
			}
		}
		if loc := p["ssl.keystore.location"]; loc != "" {
			cert, err := tls.LoadX509KeyPair(loc, loc)
			if err != nil {
				return nil, fail("ssl.keystore.location: %v", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		if algo, ok := p["ssl.endpoint.identification.algorithm"]; ok && algo == "" {
			cfg.InsecureSkipVerify = true // Kafka's empty algorithm: no host check
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	default:
		return nil, fail("security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", proto)
	}
	if !strings.HasPrefix(proto, "SASL_") {
		return opts, nil
	}
	j, err := sasl.ParseJAAS(p["sasl.jaas.config"])
	if err != nil {
		return nil, fail("sasl.jaas.config: %v", err)
	}
	user, pass := j.Options["username"], j.Options["password"]
	if user == "" || pass == "" {
		return nil, fail("sasl.jaas.config needs username and password")
	}
	switch mech := strings.ToUpper(p["sasl.mechanism"]); mech {
	case "", sasl.MechanismPlain:
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
	case sasl.MechanismScramSHA256:
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
	case sasl.MechanismScramSHA512:
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	default:
		return nil, fail("sasl.mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	return opts, nil
}
