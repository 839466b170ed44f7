package config

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ListenerTLS is the TLS of one SSL listener, built from the ssl.* keys
// (and their listener.name.<name>.ssl.* overrides). Its keystore and
// truststore can be reloaded (Reload): each new handshake, served or
// dialled, uses the ones loaded last; connections already open keep
// theirs. Safe for concurrent use.
type ListenerTLS struct {
	// Server serves the listener: its GetConfigForClient hands each
	// handshake the keystore's certificate and, with ssl.client.auth
	// requested or required, the truststore's CAs to verify client
	// certificates, as loaded last. Its ClientAuth and versions are the
	// configured ones.
	Server *tls.Config
	// ClientAuth is ssl.client.auth: none, requested or required.
	ClientAuth string

	opts tlsOpts
	// reloadMu serialises Reload; cur is what handshakes use now.
	reloadMu sync.Mutex
	cur      atomic.Pointer[tlsMaterial]
}

// ClientFor returns the client config for dialling addr (host:port) on
// another broker (replica fetchers, when this is
// inter.broker.listener.name; controllers, for CONTROLLER): the
// truststore's CAs verify the server, the keystore's certificate is
// presented when asked (mTLS), and ServerName is addr's host, checked
// against the server's certificate unless
// ssl.endpoint.identification.algorithm is empty.
func (t *ListenerTLS) ClientFor(addr string) *tls.Config {
	c := t.cur.Load().client.Clone()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		c.ServerName = host
	}
	return c
}

// Leaf is the listener's own certificate as loaded last.
func (t *ListenerTLS) Leaf() *x509.Certificate { return t.cur.Load().cert.Leaf }

// Trusted is the truststore's CA pool as loaded last (nil without one).
func (t *ListenerTLS) Trusted() *x509.CertPool { return t.cur.Load().roots }

// sslKey is one ssl.* key: a listener may override it with
// listener.name.<listener>.<key>.
type sslKey struct {
	name, def, help string
	// sensitive values (private keys, passwords) are never described
	// (DescribeConfigs answers them as null, as Kafka does).
	sensitive bool
}

// sslKeys are the TLS keys of SSL listeners, in Kafka's names (KIP-651
// for the PEM forms).
var sslKeys = []sslKey{
	{"ssl.keystore.type", "PEM", "keystore format: PEM (JKS and PKCS12 are not supported yet)", false},
	{"ssl.keystore.location", "", "PEM file holding the private key and the certificate chain", false},
	{"ssl.keystore.certificate.chain", "", "the certificate chain, inline PEM (with ssl.keystore.key, instead of ssl.keystore.location)", false},
	{"ssl.keystore.key", "", "the private key, inline unencrypted PEM (PKCS#8, PKCS#1 or SEC 1)", true},
	{"ssl.keystore.password", "", "password of a JKS or PKCS12 keystore (not supported yet: leave empty with PEM)", true},
	{"ssl.key.password", "", "password of an encrypted private key (not supported yet: decrypt the key)", true},
	{"ssl.truststore.type", "PEM", "truststore format: PEM (JKS and PKCS12 are not supported yet)", false},
	{"ssl.truststore.location", "", "PEM file of the CA certificates trusted to sign client (mTLS) and peer broker certificates", false},
	{"ssl.truststore.certificates", "", "the trusted CA certificates, inline PEM (instead of ssl.truststore.location)", false},
	{"ssl.truststore.password", "", "password of a JKS or PKCS12 truststore (not supported yet: leave empty with PEM)", true},
	{"ssl.client.auth", "none", "client certificates: none, requested (verified if sent) or required (mTLS)", false},
	{"ssl.enabled.protocols", "TLSv1.2,TLSv1.3", "TLS versions a listener accepts: TLSv1.2 and/or TLSv1.3", false},
	{"ssl.cipher.suites", "", "TLS 1.2 cipher suites by IANA name, comma-separated (default: Go's secure list; TLS 1.3 suites are not configurable)", false},
	{"ssl.endpoint.identification.algorithm", "https", "https: a broker dialling an SSL listener checks the certificate names the dialled host; empty: it checks only the chain", false},
}

// sslKeyTable is sslKeys in the table of keys: each value is kept for
// buildTLS, which checks them for the SSL listeners only.
func sslKeyTable() []key {
	out := make([]key, len(sslKeys))
	for i, k := range sslKeys {
		out[i] = key{name: k.name, def: k.def, help: k.help, parse: func(c *Config, v string) error {
			if c.ssl == nil {
				c.ssl = map[string]string{}
			}
			c.ssl[k.name] = v
			return nil
		}}
	}
	return out
}

// listenerOverride splits listener.name.<listener>.<ssl key> into the
// upper-cased listener name and the ssl key.
func listenerOverride(name string) (listener, k string, ok bool) {
	rest, ok := strings.CutPrefix(strings.ToLower(name), "listener.name.")
	if !ok {
		return "", "", false
	}
	for _, s := range sslKeys {
		if l, ok := strings.CutSuffix(rest, "."+s.name); ok && l != "" {
			return strings.ToUpper(l), s.name, true
		}
	}
	return saslOverride(rest)
}

// envListenerOverride is listenerOverride for SLUICE_LISTENER_NAME_<LISTENER>_<SSL_KEY>.
func envListenerOverride(env string) (listener, k string, ok bool) {
	rest, ok := strings.CutPrefix(env, EnvPrefix+"_LISTENER_NAME_")
	if !ok {
		return "", "", false
	}
	for _, s := range sslKeys {
		if l, ok := strings.CutSuffix(rest, strings.TrimPrefix(envName(s.name), EnvPrefix)); ok && l != "" {
			return strings.ToUpper(l), s.name, true
		}
	}
	return envSASLOverride(rest)
}

// buildTLS builds the TLS of the SSL listener name from the ssl.* values,
// each taken from listener.name.<name>.<key> when that is set.
func (c *Config) buildTLS(name string) (*ListenerTLS, error) {
	get := func(k string) (string, string) {
		if v, ok := c.sslOverrides[name][k]; ok {
			return v, "listener.name." + strings.ToLower(name) + "." + k
		}
		return c.ssl[k], k
	}
	fail := func(k, format string, a ...any) error {
		return fmt.Errorf("%w: listener %s (SSL): %s: %s", ErrInvalid, name, k, fmt.Sprintf(format, a...))
	}
	for _, t := range []string{"ssl.keystore.type", "ssl.truststore.type"} {
		if v, k := get(t); !strings.EqualFold(v, "PEM") {
			return nil, fail(k, "%q is not supported yet: Sluice reads PEM only (JKS and PKCS12 are not supported yet); convert with `keytool -importkeystore -deststoretype PKCS12` then `openssl pkcs12 -nodes`, and set %s=PEM", v, k)
		}
	}
	for _, p := range []string{"ssl.keystore.password", "ssl.truststore.password"} {
		if v, k := get(p); v != "" {
			return nil, fail(k, "is for JKS and PKCS12 stores, which Sluice does not read yet; PEM stores take no password: remove it")
		}
	}
	if v, k := get("ssl.key.password"); v != "" {
		return nil, fail(k, "encrypted private keys are not supported yet: decrypt the key (`openssl pkcs8 -topk8 -nocrypt -in key.pem`) and remove %s", k)
	}

	// The keystore: a file with key and chain, or both inline.
	o := tlsOpts{listener: name}
	loc, locKey := get("ssl.keystore.location")
	chain, chainKey := get("ssl.keystore.certificate.chain")
	inlineKey, keyKey := get("ssl.keystore.key")
	switch {
	case loc != "" && (chain != "" || inlineKey != ""):
		return nil, fail(locKey, "set either %s or %s with %s, not both", locKey, chainKey, keyKey)
	case loc != "":
		o.keystore, o.keystoreKey = loc, locKey
	case chain != "" && inlineKey != "":
		o.inlineCert, o.inlineKey, o.keystoreKey = []byte(chain), []byte(inlineKey), chainKey+", "+keyKey
	case chain != "" || inlineKey != "":
		return nil, fail(chainKey, "%s and %s go together: set both (or ssl.keystore.location with a PEM file holding both)", chainKey, keyKey)
	default:
		return nil, fail("ssl.keystore.location", "an SSL listener needs a certificate: set ssl.keystore.location to a PEM file with the private key and certificate chain, or ssl.keystore.certificate.chain and ssl.keystore.key (or their listener.name.%s. forms)", strings.ToLower(name))
	}

	// The truststore, optional unless client certificates are checked.
	tloc, tlocKey := get("ssl.truststore.location")
	tcerts, tcertsKey := get("ssl.truststore.certificates")
	if tloc != "" && tcerts != "" {
		return nil, fail(tlocKey, "set either %s or %s, not both", tlocKey, tcertsKey)
	}
	o.truststore, o.truststoreKey, o.inlineTrust = tloc, tlocKey, []byte(tcerts)
	if tloc == "" {
		o.truststoreKey = tcertsKey
	}

	t := &ListenerTLS{}
	auth, authKey := get("ssl.client.auth")
	t.ClientAuth = strings.ToLower(auth)
	if name == ListenerController {
		// Raft and forwarding between controllers and brokers: both
		// sides prove who they are (mutual TLS), always.
		if t.ClientAuth != "required" && strings.HasPrefix(authKey, "listener.name.") {
			return nil, fail(authKey, "%q: the %s listener always requires client certificates (mutual TLS between the nodes): set it to required or remove it", auth, ListenerController)
		}
		t.ClientAuth = "required"
	}
	switch t.ClientAuth {
	case "none":
		o.clientAuth = tls.NoClientCert
	case "requested":
		o.clientAuth = tls.VerifyClientCertIfGiven
	case "required":
		o.clientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fail(authKey, "%q: want none, requested or required", auth)
	}
	if t.ClientAuth != "none" && tloc == "" && tcerts == "" {
		return nil, fail(authKey, "%s verifies client certificates against the truststore: set ssl.truststore.location or ssl.truststore.certificates to the CA that signs them (or their listener.name.%s. forms)", t.ClientAuth, strings.ToLower(name))
	}
	protos, protosKey := get("ssl.enabled.protocols")
	for _, p := range strings.Split(protos, ",") {
		var v uint16
		switch strings.TrimSpace(p) {
		case "TLSv1.2":
			v = tls.VersionTLS12
		case "TLSv1.3":
			v = tls.VersionTLS13
		case "":
			continue
		default:
			return nil, fail(protosKey, "%q: Sluice speaks TLSv1.2 and TLSv1.3 (older versions are insecure)", strings.TrimSpace(p))
		}
		if o.minVersion == 0 || v < o.minVersion {
			o.minVersion = v
		}
		o.maxVersion = max(o.maxVersion, v)
	}
	if o.minVersion == 0 {
		return nil, fail(protosKey, "enable at least one of TLSv1.2, TLSv1.3")
	}
	suites, suitesKey := get("ssl.cipher.suites")
	if strings.TrimSpace(suites) != "" {
		byName := map[string]uint16{}
		for _, s := range tls.CipherSuites() {
			byName[s.Name] = s.ID
		}
		for _, s := range strings.Split(suites, ",") {
			s = strings.TrimSpace(s)
			id, ok := byName[s]
			if !ok {
				return nil, fail(suitesKey, "%q is not a cipher suite Go offers as secure; use IANA names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", s)
			}
			o.suites = append(o.suites, id)
		}
	}
	algo, algoKey := get("ssl.endpoint.identification.algorithm")
	switch strings.ToLower(algo) {
	case "https":
		o.checkName = true
	case "":
		// Verify the chain, not the name (Kafka's empty algorithm).
	default:
		return nil, fail(algoKey, "%q: want https (check the host name) or empty (check the chain only)", algo)
	}
	t.opts = o
	m, err := o.load(nil)
	if err != nil {
		return nil, err
	}
	t.cur.Store(m)
	t.Server = &tls.Config{
		ClientAuth: o.clientAuth, MinVersion: o.minVersion, MaxVersion: o.maxVersion, CipherSuites: o.suites,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return t.cur.Load().server, nil },
	}
	return t, nil
}

// pemBlock finds PEM blocks even when their line breaks were lost: a
// properties value joined from continuation lines, or written with
// literal \n, as Kafka's PEM parser accepts them.
var pemBlock = regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END ([A-Z0-9 ]+)-----`)

// pemBlocks decodes every PEM block of b: its type and DER bytes.
func pemBlocks(b []byte) (types []string, ders [][]byte, err error) {
	for _, m := range pemBlock.FindAllSubmatch(b, -1) {
		if string(m[1]) != string(m[3]) {
			return nil, nil, fmt.Errorf("PEM block BEGIN %s ends with END %s", m[1], m[3])
		}
		body := strings.ReplaceAll(string(m[2]), `\n`, "")
		body = strings.Join(strings.Fields(body), "")
		if strings.Contains(body, ":") {
			return nil, nil, fmt.Errorf("PEM block %s has headers (an encrypted key?): decrypt it, e.g. `openssl pkcs8 -topk8 -nocrypt`", m[1])
		}
		der, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			return nil, nil, fmt.Errorf("PEM block %s: bad base64: %v", m[1], err)
		}
		types, ders = append(types, string(m[1])), append(ders, der)
	}
	return types, ders, nil
}

// parseCertificates returns the certificates of PEM text.
func parseCertificates(b []byte) ([]*x509.Certificate, error) {
	types, ders, err := pemBlocks(b)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for i, t := range types {
		if t != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(ders[i])
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %v", len(out)+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate found (want -----BEGIN CERTIFICATE----- blocks)")
	}
	return out, nil
}

// parseKeyPair returns the certificate chain of certPEM with the private
// key of keyPEM (the two may be the same text), checking they match.
func parseKeyPair(certPEM, keyPEM []byte) (tls.Certificate, error) {
	certs, err := parseCertificates(certPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	types, ders, err := pemBlocks(keyPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	var key any
	for i, t := range types {
		switch t {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(ders[i])
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(ders[i])
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(ders[i])
		case "ENCRYPTED PRIVATE KEY":
			return tls.Certificate{}, errors.New("the private key is encrypted, which is not supported yet: decrypt it (`openssl pkcs8 -topk8 -nocrypt -in key.pem`)")
		default:
			continue
		}
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("%s: %v", t, err)
		}
		break
	}
	if key == nil {
		return tls.Certificate{}, errors.New("no PEM private key found (want a -----BEGIN PRIVATE KEY----- block, unencrypted)")
	}
	out := tls.Certificate{PrivateKey: key, Leaf: certs[0]}
	for _, c := range certs {
		out.Certificate = append(out.Certificate, c.Raw)
	}
	// The key must belong to the leaf, as tls.X509KeyPair checks.
	pub, ok := key.(crypto.Signer)
	eq, ok2 := certs[0].PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !ok2 || !eq.Equal(pub.Public()) {
		return tls.Certificate{}, errors.New("the private key does not match the first certificate of the chain (the server's own certificate must come first)")
	}
	return out, nil
}

// sslListeners are the names of the Kafka listeners mapped to SSL or
// SASL_SSL, and CONTROLLER and HTTP when they are mapped to SSL.
func (c *Config) sslListeners() []string {
	var out []string
	for _, l := range c.KafkaListeners {
		if p := c.SecurityProtocols[l.Name]; p == "SSL" || p == "SASL_SSL" {
			out = append(out, l.Name)
		}
	}
	for _, name := range []string{ListenerController, ListenerHTTP} {
		if _, ok := c.Listener(name); ok && c.SecurityProtocols[name] == "SSL" {
			out = append(out, name)
		}
	}
	return slices.Clip(out)
}
