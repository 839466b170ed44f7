package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSecureCluster (issue 19): `cluster start --secure` starts three real
// node processes whose one Kafka listener is SASL_SSL with the cluster's
// own CA, SCRAM and ACLs. With the client.properties it writes, franz-go
// creates an RF=3 topic, produces acks=all (replicated between the
// brokers over SASL_SSL) and reads it back, and kcat with kcat.conf sees
// every broker; a plaintext client, and the admin with a wrong password,
// get nothing; the controller port takes a node's certificate over TLS and
// closes a plaintext peer.
func TestSecureCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	base, err := FreeBasePort(14600, 50, 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l, err := Start(ctx, io.Discard, Options{Dir: t.TempDir(), Nodes: 3, BasePort: base, Executable: exe, Secure: true})
	t.Cleanup(func() { _ = Stop(context.Background(), io.Discard, l) })
	if err != nil {
		t.Fatal(err)
	}
	if cur, err := readLayout(l.Dir); err != nil || cur.ClientProperties == "" || cur.Listener != secureListener {
		t.Fatalf("cluster.json: %+v %v", cur, err)
	}
	cl, err := l.client(nil, kgo.DefaultProduceTopic("secured"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ConsumeTopics("secured"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, nil, "secured"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce over SASL_SSL: %v", err)
		}
	}
	for got := 0; got < 10; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}

	refused := func(what string, opts ...kgo.Opt) error {
		t.Helper()
		c, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(l.Nodes[0].Kafka), kgo.RequestRetries(0), kgo.RetryTimeout(0)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err = c.Ping(pctx)
		if err == nil {
			t.Fatalf("%s got in", what)
		}
		return err
	}
	refused("a plaintext client")
	sec, _ := os.ReadFile(l.ClientProperties)
	wrong := strings.Replace(string(sec), `password="`, `password="x`, 1)
	wrongPath := filepath.Join(t.TempDir(), "wrong.properties")
	if err := os.WriteFile(wrongPath, []byte(wrong), 0o600); err != nil {
		t.Fatal(err)
	}
	wl := l
	wl.ClientProperties = wrongPath
	wc, err := wl.client(nil, kgo.RequestRetries(0), kgo.RetryTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	err = wc.Ping(pctx)
	pcancel()
	wc.Close()
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("the admin with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	// The controller port speaks mutual TLS: a node's certificate gets a
	// handshake, a plaintext peer is closed before anything is read.
	nodeCert, err := tls.LoadX509KeyPair(filepath.Join(l.Dir, "secure", "node-1.pem"), filepath.Join(l.Dir, "secure", "node-1.pem"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(l.Dir, "secure", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", l.Nodes[0].Controller,
		&tls.Config{RootCAs: roots, ServerName: "127.0.0.1", Certificates: []tls.Certificate{nodeCert}})
	if err != nil {
		t.Fatalf("TLS to the controller port: %v", err)
	}
	tc.Close()
	pc, err := net.DialTimeout("tcp", l.Nodes[0].Controller, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = pc.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = pc.Write([]byte{0xC5, 1, 0, 0, 0, 0, 9, 0xF5})
	if _, err := pc.Read(make([]byte, 1)); err == nil {
		t.Fatal("the controller port answered a plaintext peer")
	}
	pc.Close()

	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if kcat, err = exec.LookPath("kafkacat"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("kcat not installed, and CI is set")
			}
			t.Skip("kcat not installed")
		}
	}
	out, err := exec.CommandContext(ctx, kcat, "-F", filepath.Join(l.Dir, "kcat.conf"), "-b", l.BootstrapServers, "-L").CombinedOutput()
	if err != nil || !strings.Contains(string(out), " 3 brokers:") {
		t.Fatalf("kcat -F kcat.conf -L: %v\n%s", err, out)
	}
}
