package quorum

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// testCA signs certificates for the controller-port tests (quorum cannot
// import node/tlstest: it is a leaf).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(tb testing.TB) *testCA {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "quorum test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue signs a client and server certificate named cn for 127.0.0.1.
func (ca *testCA) issue(tb testing.TB, cn string) tls.Certificate {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// mtls sets c up for mutual TLS with cert, trusting ca.
func (ca *testCA) mtls(c *Config, cert tls.Certificate) { ca.mtlsCache(c, cert, nil) }

// mtlsCache is mtls with a client session cache (resumption), as the
// node's config.ListenerTLS gives.
func (ca *testCA) mtlsCache(c *Config, cert tls.Certificate, cache tls.ClientSessionCache) {
	c.ServerTLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool}
	c.ClientTLS = func(addr string) *tls.Config {
		host, _, _ := net.SplitHostPort(addr)
		return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: ca.pool, ServerName: host, ClientSessionCache: cache}
	}
}

// TestControllerPortMutualTLS: three voters over mutual TLS elect and
// forward; a controller of the same cluster id without TLS, one with a
// certificate of another CA, and one whose trusted certificate
// AuthorizePeer refuses can neither forward nor join, and each refusal
// is counted.
func TestControllerPortMutualTLS(t *testing.T) {
	ca := newTestCA(t)
	var refusedByPeerCheck atomic.Int64
	nodes := startQuorum(t, 3, func(c *Config) {
		ca.mtls(c, ca.issue(t, "controller"))
		c.AuthorizePeer = func(cert *x509.Certificate) error {
			if cert.Subject.CommonName != "controller" {
				refusedByPeerCheck.Add(1)
				return errors.New("not a controller")
			}
			return nil
		}
	})
	leader := leaderOf(t, nodes)
	registerBrokers(t, followerOf(nodes, leader), 1, 2, 3) // forwarded over mTLS
	waitSameImage(t, nodes, leader)

	stranger := newTestCA(t)
	before := leader.c.RaftStats().RefusedConns
	for _, tc := range []struct {
		name  string
		tweak func(*Config)
	}{
		{"plaintext", nil},
		{"another CA", func(c *Config) { stranger.mtls(c, stranger.issue(t, "controller")) }},
		{"trusted, refused by AuthorizePeer", func(c *Config) {
			ca.mtls(c, ca.issue(t, "client"))
			c.ClientTLS = func(string) *tls.Config {
				return &tls.Config{Certificates: []tls.Certificate{ca.issue(t, "client")}, RootCAs: ca.pool, ServerName: "127.0.0.1"}
			}
		}},
	} {
		out := &testNode{id: 9, dir: t.TempDir()}
		out.start(t, listen(t), nil, tc.tweak)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _, err := out.c.forwardCommand(ctx, leader.addr, &FenceBroker{ID: 2, Epoch: leader.c.Image().Brokers[2].Epoch}, false)
		cancel()
		out.stop(t)
		if err == nil {
			t.Fatalf("%s: fence_broker forwarded", tc.name)
		}
	}
	if got := leader.c.RaftStats().RefusedConns - before; got < 3 {
		t.Fatalf("%d refusals counted, want at least 3", got)
	}
	if refusedByPeerCheck.Load() == 0 {
		t.Fatal("AuthorizePeer was never asked")
	}
	if b := leader.c.Image().Brokers[2]; b.Fenced {
		t.Fatalf("broker 2 fenced: %+v", b)
	}
	if _, err := Open(Config{NodeID: 9, Dir: t.TempDir(), BindAddr: "127.0.0.1:0", ServerTLS: &tls.Config{}}); err == nil || !strings.Contains(err.Error(), "both ServerTLS and ClientTLS") {
		t.Fatalf("ServerTLS without ClientTLS: %v", err)
	}
}

// BenchmarkForwardStatus: one forwarded request, plaintext against
// mutual TLS on the controller port, a new connection each (as before
// forward_pool.go) with full handshakes and resumed ones (TLS 1.3 session
// tickets: no certificate signatures), and on kept connections
// ("-reused", the default now), in the same run.
//
//	go test -run '^$' -bench ForwardStatus ./quorum/
func BenchmarkForwardStatus(b *testing.B) {
	ca := newTestCA(b)
	for _, mode := range []string{"plaintext", "mtls", "mtls-resumed", "plaintext-reused", "mtls-reused"} {
		b.Run(mode, func(b *testing.B) {
			ln := benchListen(b)
			cfg := Config{NodeID: 1, Dir: b.TempDir(), Listener: ln, InitialVoters: []Voter{{ID: 1, Addr: ln.Addr().String()}}}
			switch mode {
			case "mtls", "mtls-reused":
				ca.mtls(&cfg, ca.issue(b, "controller"))
			case "mtls-resumed":
				ca.mtlsCache(&cfg, ca.issue(b, "controller"), tls.NewLRUClientSessionCache(16))
			}
			c, err := Open(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			c.pool.noReuse = !strings.HasSuffix(mode, "-reused")
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				if err := c.forward(ctx, c.Addr(), &forwardRequest{Op: opStatus}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestControllerPortNodeIdentity: with AuthorizePeerNode each member's
// certificate names its node id; the quorum elects and forwards, and a
// process holding member 2's certificate (trusted, a super user) that
// says it is node 9 is refused before raft or forwarding read a byte,
// so it cannot fence anyone.
func TestControllerPortNodeIdentity(t *testing.T) {
	ca := newTestCA(t)
	var refused atomic.Int64
	byID := func(cert *x509.Certificate, id int32) error {
		if want := fmt.Sprintf("node-%d", id); cert.Subject.CommonName != want {
			refused.Add(1)
			return fmt.Errorf("certificate %s is not %s", cert.Subject.CommonName, want)
		}
		return nil
	}
	nodes := startQuorum(t, 3, func(c *Config) {
		ca.mtls(c, ca.issue(t, fmt.Sprintf("node-%d", c.NodeID)))
		c.AuthorizePeerNode = byID
	})
	leader := leaderOf(t, nodes)
	for _, n := range nodes { // each node registers itself, forwarded but on the leader
		registerBrokers(t, n, n.id)
	}
	waitSameImage(t, nodes, leader)
	if refused.Load() != 0 {
		t.Fatalf("%d members refused", refused.Load())
	}
	// A proven node speaks only for itself: the follower may not fence,
	// register or change the ISRs of another broker.
	f := followerOf(nodes, leader)
	other := int32(1 + f.id%3)
	before := leader.c.mux.refused.Load()
	for _, cmd := range []Command{
		&FenceBroker{ID: other, Epoch: leader.c.Image().Brokers[other].Epoch},
		&RegisterBroker{ID: other},
		&ControlledShutdown{ID: other, Epoch: leader.c.Image().Brokers[other].Epoch},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _, err := f.c.forwardCommand(ctx, leader.addr, cmd, false)
		cancel()
		if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
			t.Fatalf("node %d forwarded %s for broker %d: %v, want CLUSTER_AUTHORIZATION_FAILED", f.id, cmd.CommandType(), other, err)
		}
	}
	if got := leader.c.mux.refused.Load() - before; got != 3 {
		t.Fatalf("%d refusals counted, want 3", got)
	}
	if b := leader.c.Image().Brokers[other]; b.Fenced || b.ShuttingDown {
		t.Fatalf("broker %d changed by node %d's forwarded commands: %+v", other, f.id, b)
	}
	impostor := &testNode{id: 9, dir: t.TempDir()}
	impostor.start(t, listen(t), nil, func(c *Config) { ca.mtls(c, ca.issue(t, "node-2")) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_, _, err := impostor.c.forwardCommand(ctx, leader.addr, &FenceBroker{ID: 3, Epoch: leader.c.Image().Brokers[3].Epoch}, false)
	cancel()
	impostor.stop(t)
	if err == nil {
		t.Fatal("node 2's certificate forwarded fence_broker as node 9")
	}
	if refused.Load() == 0 {
		t.Fatal("the impostor was not refused by AuthorizePeerNode")
	}
	if b := leader.c.Image().Brokers[3]; b.Fenced {
		t.Fatalf("broker 3 fenced: %+v", b)
	}
}
