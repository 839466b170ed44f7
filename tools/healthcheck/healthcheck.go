// Package healthcheck is `sluice healthcheck`: one HTTP GET of a node's
// /readyz (or any URL), exit status 0 when it answers 2xx and 1 otherwise,
// with the node's reason on stderr. It exists for the container image,
// which is built FROM scratch and has no curl or shell for a Docker
// HEALTHCHECK (deploy/Dockerfile); Kubernetes probes /readyz itself. For
// a node whose HTTP listener is mapped to SSL, --cacert names the CAs to
// trust and --cert a client key and certificate (one PEM file).
package healthcheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// DefaultURL is the readiness endpoint of a node whose HTTP listener is on
// its default port (HTTP://:9644), seen from inside its container.
const DefaultURL = "http://127.0.0.1:9644/readyz"

// Command is `sluice healthcheck`; its flags are the fields.
type Command struct {
	URL     string
	Timeout time.Duration
	// CACert (--cacert) is a PEM file of the CAs that sign an https
	// node's certificate (HTTP mapped to SSL); empty: the system's.
	CACert string
	// Cert (--cert) is a PEM file with a client key and certificate
	// chain, as ssl.keystore.location holds them, for a node whose HTTP
	// listener requires client certificates.
	Cert string
}

// client is the HTTP client for c's TLS flags.
func (c *Command) client() (*http.Client, error) {
	if c.CACert == "" && c.Cert == "" {
		return http.DefaultClient, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CACert != "" {
		b, err := os.ReadFile(c.CACert)
		if err != nil {
			return nil, fmt.Errorf("healthcheck: --cacert: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("healthcheck: --cacert %s: no PEM certificate found", c.CACert)
		}
	}
	if c.Cert != "" {
		b, err := os.ReadFile(c.Cert)
		if err != nil {
			return nil, fmt.Errorf("healthcheck: --cert: %w", err)
		}
		cert, err := tls.X509KeyPair(b, b)
		if err != nil {
			return nil, fmt.Errorf("healthcheck: --cert %s: want one PEM file with the private key and the certificate chain: %w", c.Cert, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}, nil
}

// Run asks URL once and returns nil for a 2xx answer, else an error with
// the status and the start of the body (the node's reason).
func (c *Command) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %s: %w (is the node's HTTP listener there?)", c.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("healthcheck: %s: %s: %s", c.URL, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// NewCommand returns `sluice healthcheck`.
func NewCommand() *cobra.Command {
	c := &Command{}
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 if a node's /readyz answers 200, else 1 (for container health checks)",
		Long: `healthcheck sends one GET to --url (default: this host's node, /readyz on the
default HTTP port) and exits 0 when it answers 2xx, 1 otherwise, printing the
node's reason. /readyz answers 200 once the broker is registered and
unfenced, its log directory online and every partition it leads serving.`,
		Example: `  sluice healthcheck
  sluice healthcheck --url http://sluice-1:9644/readyz --timeout 5s
  sluice healthcheck --url https://127.0.0.1:9644/readyz --cacert ca.pem --cert client.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.Run(cmd.Context()) },
	}
	cmd.Flags().StringVar(&c.URL, "url", DefaultURL, "URL to GET")
	cmd.Flags().DurationVar(&c.Timeout, "timeout", 3*time.Second, "give up after this long")
	cmd.Flags().StringVar(&c.CACert, "cacert", "", "PEM file of the CAs to trust for an https URL (HTTP listener mapped to SSL)")
	cmd.Flags().StringVar(&c.Cert, "cert", "", "PEM file with the client's private key and certificate chain, for an HTTP listener with ssl.client.auth=required")
	return cmd
}
