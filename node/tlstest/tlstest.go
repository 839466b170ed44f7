// Package tlstest makes throwaway certificates for tests of TLS
// listeners: a CA, and server or client certificates it signs, as PEM.
// Nothing here is for production use: keys are ECDSA P-256, made fresh,
// valid for a day (NewCA, Issue) or as long as asked (NewCAValid,
// IssueValid: the local development cluster of `sluice cluster start
// --secure`).
//
//	ca, _ := tlstest.NewCA("test CA")
//	srv, _ := ca.Issue("broker", "127.0.0.1", "localhost")
//	os.WriteFile(dir+"/broker.pem", srv.KeyStorePEM(), 0o600) // ssl.keystore.location
//	os.WriteFile(dir+"/ca.pem", ca.CertPEM, 0o644)            // ssl.truststore.location
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"time"
)

// CA is a certificate authority that signs certificates.
type CA struct {
	// CertPEM is the CA's certificate (a truststore).
	CertPEM []byte
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
}

// Cert is a signed certificate and its private key.
type Cert struct {
	CertPEM, KeyPEM []byte
}

// KeyStorePEM is key and certificate in one PEM text, as
// ssl.keystore.location takes it.
func (c Cert) KeyStorePEM() []byte { return append(append([]byte{}, c.KeyPEM...), c.CertPEM...) }

// TLS is the certificate as crypto/tls takes it (a client certificate).
func (c Cert) TLS() tls.Certificate {
	cert, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
	if err != nil {
		panic("tlstest: a certificate we made does not parse: " + err.Error())
	}
	return cert
}

// Pool is a cert pool holding the CA (a client's RootCAs).
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// NewCA makes a self-signed CA called name, valid for a day.
func NewCA(name string) (*CA, error) { return NewCAValid(name, 24*time.Hour) }

// NewCAValid makes a self-signed CA called name, valid for valid.
func NewCAValid(name string, valid time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(valid),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), cert: cert, key: key}, nil
}

// Issue signs a certificate for name, good for servers and clients, with
// hosts (IP addresses or DNS names) as subject alternative names, valid
// for a day.
func (ca *CA) Issue(name string, hosts ...string) (Cert, error) {
	return ca.IssueValid(24*time.Hour, name, hosts...)
}

// IssueValid is Issue for a certificate valid for valid.
func (ca *CA) IssueValid(valid time.Duration, name string, hosts ...string) (Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Cert{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return Cert{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(valid),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return Cert{}, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Cert{}, err
	}
	return Cert{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
	}, nil
}
