package sasl

import (
	"bytes"
	"crypto/subtle"
)

// ParsePlain splits a PLAIN message, "authzid NUL user NUL password"
// (RFC 4616). An empty user or password, or an authzid that is not the
// user, is refused (Kafka's PlainSaslServer).
func ParsePlain(msg []byte) (user, password string, err error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", "", bad("PLAIN: want authzid NUL user NUL password")
	}
	authz, u, p := string(parts[0]), string(parts[1]), string(parts[2])
	if u == "" || p == "" {
		return "", "", bad("PLAIN: empty user name or password")
	}
	if authz != "" && authz != u {
		return "", "", fail("authorization id %q is not the user name", authz)
	}
	return u, p, nil
}

// Plain is PLAIN's user table: user name to password, from the JAAS
// user_<name> options of a listener. Read-only once built.
type Plain map[string]string

// Check authenticates one PLAIN message and returns the user. The
// password is compared in constant time, and an unknown user costs the
// same comparison.
func (p Plain) Check(msg []byte) (string, error) {
	user, password, err := ParsePlain(msg)
	if err != nil {
		return "", err
	}
	want, ok := p[user]
	if !ok {
		want = "\x00" + password // never equal, same length class
	}
	if subtle.ConstantTimeCompare([]byte(want), []byte(password)) != 1 || !ok {
		return "", fail("invalid user name or password")
	}
	return user, nil
}
