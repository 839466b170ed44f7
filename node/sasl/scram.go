package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// The mechanism names, as Kafka spells them.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// Kafka's bounds on SCRAM iterations (ScramMechanism.minIterations, and
// the 16384 AlterUserScramCredentials accepts at most).
const (
	MinIterations     = 4096
	MaxIterations     = 16384
	DefaultIterations = 4096
)

var (
	// ErrAuthenticationFailed: the credentials do not check out. The
	// client is told only this (SASL_AUTHENTICATION_FAILED).
	ErrAuthenticationFailed = errors.New("authentication failed")
	// ErrBadMessage: a client message that does not parse; wrapped with
	// ErrAuthenticationFailed.
	ErrBadMessage = errors.New("malformed SASL message")
	// ErrUnknownMechanism: not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	ErrUnknownMechanism = errors.New("unknown SASL mechanism")
)

// ScramMechanism is SCRAM-SHA-256 or SCRAM-SHA-512.
type ScramMechanism struct {
	Name string
	hash func() hash.Hash
	size int
}

// Scram returns the SCRAM mechanism called name.
func Scram(name string) (ScramMechanism, error) {
	switch name {
	case MechanismScramSHA256:
		return ScramMechanism{name, sha256.New, sha256.Size}, nil
	case MechanismScramSHA512:
		return ScramMechanism{name, sha512.New, sha512.Size}, nil
	}
	return ScramMechanism{}, fmt.Errorf("%w: %q is not SCRAM-SHA-256 or SCRAM-SHA-512", ErrUnknownMechanism, name)
}

// Credential is what the server keeps for one SCRAM user and mechanism.
type Credential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

func (m ScramMechanism) hmac(key []byte, parts ...string) []byte {
	h := hmac.New(m.hash, key)
	for _, p := range parts {
		h.Write([]byte(p))
	}
	return h.Sum(nil)
}

func (m ScramMechanism) h(b []byte) []byte {
	h := m.hash()
	h.Write(b)
	return h.Sum(nil)
}

// SaltPassword is PBKDF2(HMAC-H, password, salt, iterations).
func (m ScramMechanism) SaltPassword(password string, salt []byte, iterations int) ([]byte, error) {
	return pbkdf2.Key(m.hash, password, salt, iterations, m.size)
}

// CredentialFromSalted derives the stored credential from a salted
// password (what AlterUserScramCredentials carries).
func (m ScramMechanism) CredentialFromSalted(salted, salt []byte, iterations int) Credential {
	clientKey := m.hmac(salted, "Client Key")
	return Credential{
		Salt: append([]byte(nil), salt...), Iterations: iterations,
		StoredKey: m.h(clientKey), ServerKey: m.hmac(salted, "Server Key"),
	}
}

// NewCredential derives a credential from a password with a fresh random
// salt (salt nil) or the one given.
func (m ScramMechanism) NewCredential(password string, salt []byte, iterations int) (Credential, error) {
	if iterations < MinIterations || iterations > MaxIterations {
		return Credential{}, fmt.Errorf("iterations %d: want %d to %d", iterations, MinIterations, MaxIterations)
	}
	if salt == nil {
		salt = make([]byte, 32)
		_, _ = rand.Read(salt)
	}
	salted, err := m.SaltPassword(password, salt, iterations)
	if err != nil {
		return Credential{}, err
	}
	return m.CredentialFromSalted(salted, salt, iterations), nil
}

// Lookup finds the credential of a user; ok false for an unknown user.
type Lookup func(user string) (c Credential, ok bool)

// ScramServer is the server side of one SCRAM exchange. Not safe for
// concurrent use.
type ScramServer struct {
	m      ScramMechanism
	lookup Lookup
	// secret makes up the salt of unknown users.
	secret []byte
	// nonce returns the server's part of the nonce; crypto/rand by
	// default (tests set the RFC's).
	nonce func() string

	step                   int
	user, clientFirstBare  string
	serverFirst, fullNonce string
	cred                   Credential
	known                  bool
}

// NewScramServer starts an exchange for mechanism m with credentials
// from lookup. secret (at least 16 bytes, the same for the life of the
// process) salts unknown users' made-up credentials.
func NewScramServer(m ScramMechanism, lookup Lookup, secret []byte) *ScramServer {
	return &ScramServer{m: m, lookup: lookup, secret: secret, nonce: randomNonce}
}

func randomNonce() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}

// User is the authenticated user once Step reported done.
func (s *ScramServer) User() string { return s.user }

func fail(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrAuthenticationFailed, fmt.Sprintf(format, a...))
}

func bad(format string, a ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrAuthenticationFailed, ErrBadMessage, fmt.Sprintf(format, a...))
}

// Step takes the client's next message and returns the server's answer;
// done is set with the last answer (server-final). Any error ends the
// exchange.
func (s *ScramServer) Step(msg []byte) (resp []byte, done bool, err error) {
	switch s.step {
	case 0:
		s.step = 1
		r, err := s.clientFirst(string(msg))
		return []byte(r), false, err
	case 1:
		s.step = 2
		r, err := s.clientFinal(string(msg))
		return []byte(r), err == nil, err
	}
	return nil, false, fail("the SCRAM exchange is over")
}

// ClientFirst is a parsed client-first message.
type ClientFirst struct {
	AuthzID, User, Nonce string
	// Bare is the message without its GS2 header, part of AuthMessage.
	Bare string
	// Extensions are attributes after the nonce (Kafka's tokenauth).
	Extensions map[string]string
}

// ParseClientFirst parses "gs2-header client-first-message-bare".
func ParseClientFirst(msg string) (ClientFirst, error) {
	var cf ClientFirst
	cbind, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return cf, bad("client-first: no GS2 header")
	}
	switch {
	case cbind == "n" || cbind == "y":
	case strings.HasPrefix(cbind, "p="):
		return cf, fail("channel binding is not supported")
	default:
		return cf, bad("client-first: bad channel binding flag")
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return cf, bad("client-first: GS2 header not ended")
	}
	if authz != "" {
		v, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return cf, bad("client-first: bad authzid")
		}
		var err error
		if cf.AuthzID, err = decodeSaslName(v); err != nil {
			return cf, err
		}
	}
	cf.Bare = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 {
		return cf, bad("client-first: want n= and r=")
	}
	if strings.HasPrefix(attrs[0], "m=") {
		return cf, fail("mandatory SCRAM extension not supported")
	}
	u, ok := strings.CutPrefix(attrs[0], "n=")
	if !ok {
		return cf, bad("client-first: no user name")
	}
	var err error
	if cf.User, err = decodeSaslName(u); err != nil {
		return cf, err
	}
	if cf.Nonce, ok = strings.CutPrefix(attrs[1], "r="); !ok || !validNonce(cf.Nonce) {
		return cf, bad("client-first: bad nonce")
	}
	for _, a := range attrs[2:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return cf, bad("client-first: bad extension")
		}
		if cf.Extensions == nil {
			cf.Extensions = map[string]string{}
		}
		cf.Extensions[k] = v
	}
	return cf, nil
}

// validNonce: printable ASCII but ',' (RFC 5802 §7), not empty.
func validNonce(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// decodeSaslName undoes "=2C" and "=3D"; any other '=' is an error.
func decodeSaslName(s string) (string, error) {
	if s == "" {
		return "", bad("empty user name")
	}
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", bad("bad escape in user name")
		}
		i += 2
	}
	return b.String(), nil
}

// EncodeSaslName escapes ',' and '=' in a user name.
func EncodeSaslName(s string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}

func (s *ScramServer) clientFirst(msg string) (string, error) {
	cf, err := ParseClientFirst(msg)
	if err != nil {
		return "", err
	}
	if cf.AuthzID != "" && cf.AuthzID != cf.User {
		return "", fail("authorization id %q is not the user name", cf.AuthzID)
	}
	if _, ok := cf.Extensions["tokenauth"]; ok {
		return "", fail("delegation tokens are not supported")
	}
	s.user, s.clientFirstBare = cf.User, cf.Bare
	s.cred, s.known = s.lookup(cf.User)
	if !s.known {
		// Made up, stable for the user: a second try sees the same salt.
		salt := s.m.hmac(s.secret, "salt", cf.User)[:16]
		s.cred = Credential{Salt: salt, Iterations: DefaultIterations, StoredKey: s.m.hmac(s.secret, "key", cf.User), ServerKey: s.m.hmac(s.secret, "server", cf.User)}
	}
	s.fullNonce = cf.Nonce + s.nonce()
	s.serverFirst = "r=" + s.fullNonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(s.cred.Iterations)
	return s.serverFirst, nil
}

// ClientFinal is a parsed client-final message.
type ClientFinal struct {
	ChannelBinding, Nonce string
	Proof                 []byte
	// WithoutProof is the message up to ",p=", part of AuthMessage.
	WithoutProof string
}

// ParseClientFinal parses "c=...,r=...[,ext...],p=...".
func ParseClientFinal(msg string) (ClientFinal, error) {
	var cf ClientFinal
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return cf, bad("client-final: no proof")
	}
	cf.WithoutProof = msg[:i]
	proof, err := base64.StdEncoding.DecodeString(msg[i+3:])
	if err != nil {
		return cf, bad("client-final: proof is not base64")
	}
	cf.Proof = proof
	attrs := strings.Split(cf.WithoutProof, ",")
	if len(attrs) < 2 {
		return cf, bad("client-final: want c= and r=")
	}
	var ok bool
	if cf.ChannelBinding, ok = strings.CutPrefix(attrs[0], "c="); !ok {
		return cf, bad("client-final: no channel binding")
	}
	if cf.Nonce, ok = strings.CutPrefix(attrs[1], "r="); !ok {
		return cf, bad("client-final: no nonce")
	}
	return cf, nil
}

func (s *ScramServer) clientFinal(msg string) (string, error) {
	cf, err := ParseClientFinal(msg)
	if err != nil {
		return "", err
	}
	// The GS2 header of a client without channel binding: "n,," or
	// "y,,", with the authzid if it sent one.
	cb, err := base64.StdEncoding.DecodeString(cf.ChannelBinding)
	if err != nil || !(strings.HasPrefix(string(cb), "n,") || strings.HasPrefix(string(cb), "y,")) || !strings.HasSuffix(string(cb), ",") {
		return "", bad("client-final: channel binding is not the GS2 header")
	}
	// Kafka's ScramSaslServer checks that the nonce ends with the one
	// it sent, not that it equals it, and librdkafka depends on that: it
	// sends its own nonce again in front. The proof covers the message
	// as sent, and the server's random part is still required.
	if len(cf.Nonce) < len(s.fullNonce) || subtle.ConstantTimeCompare([]byte(cf.Nonce[len(cf.Nonce)-len(s.fullNonce):]), []byte(s.fullNonce)) != 1 {
		return "", fail("nonce mismatch")
	}
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + cf.WithoutProof
	sig := s.m.hmac(s.cred.StoredKey, authMessage)
	if len(cf.Proof) != len(sig) {
		return "", fail("invalid credentials")
	}
	clientKey := make([]byte, len(sig))
	subtle.XORBytes(clientKey, cf.Proof, sig)
	if subtle.ConstantTimeCompare(s.m.h(clientKey), s.cred.StoredKey) != 1 || !s.known {
		return "", fail("invalid credentials")
	}
	return "v=" + base64.StdEncoding.EncodeToString(s.m.hmac(s.cred.ServerKey, authMessage)), nil
}
