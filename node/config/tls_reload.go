package config

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
)

// tlsOpts are the settings of one SSL listener that a reload keeps: where
// the keystore and truststore come from, and what every handshake allows.
type tlsOpts struct {
	listener string
	// keystore and truststore are files (ssl.*.location), reread by
	// Reload; the inline forms are fixed.
	keystore, truststore               string
	inlineCert, inlineKey, inlineTrust []byte
	// keystoreKey and truststoreKey name the keys, for errors.
	keystoreKey, truststoreKey string
	clientAuth                 tls.ClientAuthType
	minVersion, maxVersion     uint16
	suites                     []uint16
	// checkName: ssl.endpoint.identification.algorithm=https.
	checkName bool
}

// tlsMaterial is one load of a listener's keystore and truststore, with
// the configs built over them. Immutable once built.
type tlsMaterial struct {
	// keystore and truststore are the bytes loaded, to notice a change.
	keystore, truststore []byte
	cert                 tls.Certificate
	roots                *x509.CertPool
	server, client       *tls.Config
}

func (o *tlsOpts) fail(k, format string, a ...any) error {
	return fmt.Errorf("%w: listener %s (SSL): %s: %s", ErrInvalid, o.listener, k, fmt.Sprintf(format, a...))
}

// read returns the keystore's and truststore's bytes (the truststore's
// nil without one).
func (o *tlsOpts) read() (keystore, truststore []byte, err error) {
	keystore = append(slices.Clip(o.inlineCert), o.inlineKey...)
	if o.keystore != "" {
		if keystore, err = os.ReadFile(o.keystore); err != nil {
			return nil, nil, o.fail(o.keystoreKey, "%v", err)
		}
	}
	truststore = o.inlineTrust
	if o.truststore != "" {
		if truststore, err = os.ReadFile(o.truststore); err != nil {
			return nil, nil, o.fail(o.truststoreKey, "%v", err)
		}
	}
	if len(truststore) == 0 {
		truststore = nil
	}
	return keystore, truststore, nil
}

// load reads and parses the keystore and truststore; when their bytes
// are those of prev it returns prev.
func (o *tlsOpts) load(prev *tlsMaterial) (*tlsMaterial, error) {
	keystore, truststore, err := o.read()
	if err != nil {
		return nil, err
	}
	if prev != nil && bytes.Equal(prev.keystore, keystore) && bytes.Equal(prev.truststore, truststore) {
		return prev, nil
	}
	m := &tlsMaterial{keystore: keystore, truststore: truststore}
	certPEM, keyPEM := keystore, keystore
	if o.keystore == "" {
		certPEM, keyPEM = o.inlineCert, o.inlineKey
	}
	if m.cert, err = parseKeyPair(certPEM, keyPEM); err != nil {
		return nil, o.fail(o.keystoreKey, "%v", err)
	}
	if truststore != nil {
		certs, err := parseCertificates(truststore)
		if err != nil {
			return nil, o.fail(o.truststoreKey, "%v", err)
		}
		m.roots = x509.NewCertPool()
		for _, c := range certs {
			m.roots.AddCert(c)
		}
	}
	m.server = &tls.Config{
		Certificates: []tls.Certificate{m.cert}, ClientAuth: o.clientAuth,
		MinVersion: o.minVersion, MaxVersion: o.maxVersion, CipherSuites: o.suites,
		// Full 16 KiB records from the first byte (Java's SSLEngine does
		// the same): Go's small first records help a browser's first
		// paint, not a consumer's throughput.
		DynamicRecordSizingDisabled: true,
	}
	if o.clientAuth != tls.NoClientCert {
		m.server.ClientCAs = m.roots
	}
	// Session tickets of this load only: a resumed session skips the
	// client certificate's verification, so one issued under an older
	// truststore must not resume under a newer one.
	var ticketKey [32]byte
	if _, err := rand.Read(ticketKey[:]); err != nil {
		return nil, err
	}
	m.server.SetSessionTicketKeys([][32]byte{ticketKey})
	m.client = &tls.Config{
		Certificates: m.server.Certificates, RootCAs: m.roots,
		MinVersion: o.minVersion, MaxVersion: o.maxVersion, CipherSuites: o.suites,
		// Resumption (TLS 1.3 tickets) spares the signatures of a full
		// handshake when a node dials the same peer again (forwarding
		// opens one connection per request); a reload starts a new cache,
		// so the new certificate is presented at once.
		ClientSessionCache: tls.NewLRUClientSessionCache(256),
	}
	if !o.checkName {
		// Verify the chain, not the name (Kafka's empty algorithm).
		roots := m.roots
		m.client.InsecureSkipVerify = true
		m.client.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return m, nil
}

// Reload rereads the listener's keystore and truststore files
// (ssl.keystore.location, ssl.truststore.location) and, when their
// contents changed, has every new handshake use them, as Kafka reloads a
// keystore whose file changed; connections already open keep the
// certificates they were made with. It reports whether anything changed.
// A file that does not load (missing, half written, a key that does not
// match the certificate) is an error, and the listener keeps what it had:
// the next Reload tries again. Inline PEM values never change.
func (t *ListenerTLS) Reload() (bool, error) {
	t.reloadMu.Lock()
	defer t.reloadMu.Unlock()
	prev := t.cur.Load()
	m, err := t.opts.load(prev)
	if err != nil || m == prev {
		return false, err
	}
	t.cur.Store(m)
	return true, nil
}

// ReloadTLS reloads every SSL listener's keystore and truststore
// (ListenerTLS.Reload) and returns the names of the listeners whose
// certificates changed, and the errors of those that failed to reload.
func (c *Config) ReloadTLS() (changed []string, err error) {
	var errs []error
	for _, name := range c.sslListeners() {
		t := c.TLS[name]
		if t == nil {
			continue
		}
		ok, err := t.Reload()
		if ok {
			changed = append(changed, name)
		}
		errs = append(errs, err)
	}
	return changed, errors.Join(errs...)
}
