package healthcheck

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-log/sluice/node/tlstest"
)

// TestHealthcheck: 200 is healthy, 503 is not and shows the node's
// reason, and a closed port is not.
func TestHealthcheck(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if ready.Load() {
			w.Write([]byte("ok\n"))
			return
		}
		http.Error(w, "not ready: broker fenced", http.StatusServiceUnavailable)
	}))
	c := &Command{URL: srv.URL + "/readyz", Timeout: 5 * time.Second}
	if err := c.Run(context.Background()); err != nil {
		t.Fatalf("ready node: %v", err)
	}
	ready.Store(false)
	if err := c.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "broker fenced") {
		t.Fatalf("unready node: err = %v, want 503 with the reason", err)
	}
	srv.Close()
	if err := c.Run(context.Background()); err == nil {
		t.Fatal("closed port: no error")
	}
	cmd := NewCommand()
	cmd.SetArgs([]string{"--url", "http://127.0.0.1:1/readyz", "--timeout", "1s"})
	cmd.SetErr(&strings.Builder{})
	if err := cmd.Execute(); err == nil {
		t.Fatal("the command exited 0 for a port nothing listens on")
	}
}

// TestHealthcheckTLS: an https node whose HTTP listener requires client
// certificates is healthy with --cacert and --cert, and not without the
// client certificate or the CA.
func TestHealthcheckTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA("healthcheck CA")
	if err != nil {
		t.Fatal(err)
	}
	srvCert, err := ca.Issue("node", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cliCert, err := ca.Issue("probe")
	if err != nil {
		t.Fatal(err)
	}
	caFile, certFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client.pem")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, cliCert.KeyStorePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ready\n")) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{srvCert.TLS()}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
	srv.StartTLS()
	defer srv.Close()
	url := srv.URL + "/readyz"
	for _, tc := range []struct {
		name string
		c    Command
		ok   bool
	}{
		{"CA and client certificate", Command{URL: url, CACert: caFile, Cert: certFile}, true},
		{"no client certificate", Command{URL: url, CACert: caFile}, false},
		{"no CA", Command{URL: url, Cert: certFile}, false},
	} {
		tc.c.Timeout = 5 * time.Second
		if err := tc.c.Run(context.Background()); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	bad := Command{URL: url, CACert: certFile, Cert: caFile, Timeout: time.Second}
	if err := bad.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "--cert") {
		t.Fatalf("a CA file as --cert: %v", err)
	}
}
