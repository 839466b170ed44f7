package nodecmd

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-log/sluice/node"
	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/node/tlstest"
	"github.com/sluice-log/sluice/quorum"
)

// TestSIGHUPReloadsCertificates: `sluice node` with an SSL listener, no
// reload interval and encrypted gossip; the keystore file is replaced,
// the gossip keys in the properties file rotated, and the process gets
// SIGHUP: the next handshake presents the new certificate, a TLS
// connection opened before goes on being served, and the node takes the
// new gossip keys.
func TestSIGHUPReloadsCertificates(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA("nodecmd CA")
	if err != nil {
		t.Fatal(err)
	}
	first, err := ca.Issue("first", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	keystore := filepath.Join(dir, "broker.pem")
	if err := os.WriteFile(keystore, first.KeyStorePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	kl, cl, gl := listen(t), listen(t), listen(t)
	kafkaAddr, ctrlAddr, gossipAddr := kl.Addr().String(), cl.Addr().String(), gl.Addr().String()
	kl.Close()
	cl.Close()
	gl.Close()
	oldKey, newKey := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)), base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))
	if _, err := meta.Format(dir, meta.Meta{ClusterID: quorum.NewUUID().String(), NodeID: 7,
		InitialControllers: []quorum.Voter{{ID: 7, Addr: ctrlAddr}}}); err != nil {
		t.Fatal(err)
	}
	props := filepath.Join(dir, "server.properties")
	writeProps := func(keys string) {
		t.Helper()
		if err := os.WriteFile(props, []byte("node.id=7\nlog.dirs="+dir+"\nlisteners=SSL://"+kafkaAddr+",CONTROLLER://"+ctrlAddr+",GOSSIP://"+gossipAddr+
			"\ninter.broker.listener.name=SSL\nssl.keystore.location="+keystore+"\nsluice.ssl.reload.interval.ms=0\n"+
			"sluice.gossip.encryption.keys="+keys+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeProps(oldKey)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	cmd := newCommand(func(*node.Node) { close(ready) })
	cmd.SetArgs([]string{"--config", props})
	var stderr strings.Builder
	cmd.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("node stopped before serving: %v", err)
	}
	presented := func() (*tls.Conn, string) {
		t.Helper()
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", kafkaAddr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		return c, c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	old, cn := presented()
	defer old.Close()
	if cn != "first" {
		t.Fatalf("presented %q", cn)
	}
	renewed, err := ca.Issue("renewed", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keystore, renewed.KeyStorePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, cn := presented(); cn != "first" {
		t.Fatalf("presented %q before SIGHUP with no reload interval", cn)
	}
	writeProps(newKey + "," + oldKey) // the second step of a rotation
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, cn := presented()
		c.Close()
		if cn == "renewed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %q 30 s after SIGHUP", cn)
		}
		<-tick.C
	}
	// The connection made before the reload is still served: an
	// ApiVersions request (v0: key 18, version 0, correlation 1, no client id).
	_ = old.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := old.Write([]byte{0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	var hdr [8]byte
	if _, err := old.Read(hdr[:]); err != nil || hdr[7] != 1 {
		t.Fatalf("old connection's answer % x, %v", hdr, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("node: %v", err)
	}
	for _, want := range []string{"reloaded the listener's keystore", "gossip keys changed; the first encrypts, all decrypt\" keys=2"} {
		if !strings.Contains(stderr.String(), want) {
			t.Fatalf("no %q in the log:\n%s", want, stderr.String())
		}
	}
}
