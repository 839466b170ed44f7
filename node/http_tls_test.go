package node

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHTTPSListener: HTTP mapped to SSL serves /readyz and /metrics over
// TLS with the listener's certificate and, with
// listener.name.http.ssl.client.auth=required, only to clients with a
// certificate of the truststore's CA (a Prometheus with mTLS); a client
// without one and a plaintext request are not served.
func TestHTTPSListener(t *testing.T) {
	pki := newTestPKI(t)
	tn := startNode(t, t.TempDir(),
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0,HTTP://127.0.0.1:0",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,HTTP:SSL",
		"ssl.keystore.location="+pki.keystore, "ssl.truststore.location="+pki.truststore,
		"SLUICE_LISTENER_NAME_HTTP_SSL_CLIENT_AUTH=required")
	base := "https://" + tn.http.Addr().String()
	get := func(cl *http.Client, url string) (int, string, error) {
		resp, err := cl.Get(url)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(b), nil
	}
	client := func(withCert bool) *http.Client {
		cfg := &tls.Config{RootCAs: pki.ca.Pool()}
		if withCert {
			cfg.Certificates = []tls.Certificate{pki.client.TLS()}
		}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	mtls := client(true)
	defer mtls.CloseIdleConnections()
	if code, body, err := get(mtls, base+"/readyz"); err != nil || code != http.StatusOK {
		t.Fatalf("/readyz over mTLS: %d %q %v", code, body, err)
	}
	if code, body, err := get(mtls, base+"/metrics"); err != nil || code != http.StatusOK || !strings.Contains(body, "kafka_server_") {
		t.Fatalf("/metrics over mTLS: %d, %v", code, err)
	}
	if code, _, err := get(client(false), base+"/metrics"); err == nil {
		t.Fatalf("/metrics without a client certificate answered %d", code)
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	if code, _, err := get(plain, "http://"+tn.http.Addr().String()+"/metrics"); err == nil && code == http.StatusOK {
		t.Fatal("/metrics served over plaintext on an SSL HTTP listener")
	}
}
