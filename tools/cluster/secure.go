package cluster

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/node/sasl"
	"github.com/sluice-log/sluice/node/tlstest"
	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/tools/internal/cli"
)

// A --secure cluster (issue 19) has one Kafka listener, SASL_SSL, for
// clients and brokers alike: TLS with certificates from a CA made for the
// cluster (DIR/secure/ca.pem; each node's key and certificate in
// DIR/secure/node-N.pem, for 127.0.0.1 and localhost), SCRAM-SHA-512 with
// two users bootstrapped into the metadata (admin, the super user the
// CLI and the newcomer's clients log in as, and broker, which the
// brokers use between themselves), and the StandardAuthorizer with both
// as super.users: anything else needs ACLs. The controller port speaks
// mutual TLS with the nodes' certificates (their principals, CN=sluice-
// node-N, are super users too, which the controller port requires), and
// gossip is encrypted with a key made for the cluster. The CA's key is not kept, and
// the certificates are valid for a year. What a client needs is written
// beside them: DIR/client.properties (Kafka's client settings; `sluice`
// commands run in the cluster's parent directory use it by default,
// others take --command-config) and DIR/kcat.conf (`kcat -F`).

// secureListener is a --secure cluster's Kafka listener name (and
// security protocol).
const secureListener = "SASL_SSL"

// secureValid is how long a --secure cluster's certificates are valid.
const secureValid = 365 * 24 * time.Hour

// secureFiles makes the CA, the nodes' certificates, the passwords and
// the client settings of a --secure cluster in l.Dir, bootstraps the
// SCRAM users into every node's data directory (formatted already), and
// returns the server.properties lines every node adds.
func secureFiles(l *Layout) (map[string]string, error) {
	dir := filepath.Join(l.Dir, "secure")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := tlstest.NewCAValid("sluice local cluster CA "+l.ClusterID, secureValid)
	if err != nil {
		return nil, err
	}
	caPath := filepath.Join(dir, "ca.pem")
	if err := writeFileAtomic(caPath, ca.CertPEM); err != nil {
		return nil, err
	}
	adminPass, brokerPass := password(), password()
	m, err := sasl.Scram(sasl.MechanismScramSHA512)
	if err != nil {
		return nil, err
	}
	var boot []quorum.ScramCredentialRecord
	for _, u := range []struct{ name, pass string }{{"admin", adminPass}, {"broker", brokerPass}} {
		c, err := m.NewCredential(u.pass, nil, sasl.DefaultIterations)
		if err != nil {
			return nil, err
		}
		boot = append(boot, quorum.ScramCredentialRecord{User: u.name, Mechanism: quorum.ScramSHA512, Credential: quorum.ScramCredential{
			Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: int32(c.Iterations)}})
	}
	for _, n := range l.Nodes {
		cert, err := ca.IssueValid(secureValid, fmt.Sprintf("sluice-node-%d", n.ID), "127.0.0.1", "localhost")
		if err != nil {
			return nil, err
		}
		if err := writeFileAtomic(filepath.Join(dir, fmt.Sprintf("node-%d.pem", n.ID)), cert.KeyStorePEM()); err != nil {
			return nil, err
		}
		if err := meta.WriteBootstrap(n.DataDir, boot); err != nil {
			return nil, err
		}
	}
	jaas := func(user, pass string) string {
		return fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, user, pass)
	}
	l.ClientProperties = filepath.Join(l.Dir, "client.properties")
	if err := writeFileAtomic(l.ClientProperties, []byte(strings.Join([]string{
		"# the admin super user of this local cluster (written by sluice cluster start --secure)",
		"security.protocol=SASL_SSL",
		"sasl.mechanism=SCRAM-SHA-512",
		"sasl.jaas.config=" + jaas("admin", adminPass),
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + caPath,
		""}, "\n"))); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(l.Dir, "kcat.conf"), []byte(strings.Join([]string{
		"# kcat -F " + filepath.Join(l.Dir, "kcat.conf") + " -b " + l.BootstrapServers + " -L",
		"security.protocol=SASL_SSL",
		"sasl.mechanisms=SCRAM-SHA-512",
		"sasl.username=admin",
		"sasl.password=" + adminPass,
		"ssl.ca.location=" + caPath,
		""}, "\n"))); err != nil {
		return nil, err
	}
	// The nodes' own principals (their certificates' names) are super
	// users too: with the authorizer on, only super users may use the
	// controller port, which speaks mutual TLS.
	supers := []string{"User:admin", "User:broker"}
	for _, n := range l.Nodes {
		supers = append(supers, fmt.Sprintf("User:CN=sluice-node-%d", n.ID))
	}
	gossipKey := make([]byte, 32)
	if _, err := rand.Read(gossipKey); err != nil {
		return nil, err
	}
	return map[string]string{
		"listener.security.protocol.map":                        "SASL_SSL:SASL_SSL,CONTROLLER:SSL",
		"sluice.gossip.encryption.keys":                         base64.StdEncoding.EncodeToString(gossipKey),
		"inter.broker.listener.name":                            secureListener,
		"sasl.enabled.mechanisms":                               "SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol":                  "SCRAM-SHA-512",
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": jaas("broker", brokerPass),
		"ssl.keystore.type":                                     "PEM",
		"ssl.truststore.type":                                   "PEM",
		"ssl.truststore.location":                               caPath,
		"authorizer.class.name":                                 config.StandardAuthorizer,
		"super.users":                                           strings.Join(supers, ";"),
	}, nil
}

// password is a random password for a --secure cluster's users.
func password() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// client opens a client of l's cluster with seeds (every node when
// none), with the settings of its client.properties if it has one.
func (l Layout) client(seeds []string, opts ...kgo.Opt) (*kgo.Client, error) {
	sec, err := cli.SecurityOpts(l.ClientProperties)
	if err != nil {
		return nil, err
	}
	if len(seeds) == 0 {
		seeds = strings.Split(l.BootstrapServers, ",")
	}
	return kgo.NewClient(append(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, sec...), opts...)...)
}
