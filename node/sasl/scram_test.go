package sasl

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// rfc7677 is the SCRAM-SHA-256 example of RFC 7677 §3: user "user",
// password "pencil".
var rfc7677 = struct {
	clientFirst, serverNonce, serverFirst, clientFinal, serverFinal string
}{
	clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
	serverNonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
	serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
	clientFinal: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
	serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}

func rfcServer(t *testing.T, password string) *ScramServer {
	t.Helper()
	m, err := Scram(MechanismScramSHA256)
	if err != nil {
		t.Fatal(err)
	}
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred, err := m.NewCredential(password, salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	s := NewScramServer(m, func(u string) (Credential, bool) { return cred, u == "user" }, []byte("0123456789abcdef"))
	s.nonce = func() string { return rfc7677.serverNonce }
	return s
}

func TestScramRFC7677(t *testing.T) {
	s := rfcServer(t, "pencil")
	sf, done, err := s.Step([]byte(rfc7677.clientFirst))
	if err != nil || done || string(sf) != rfc7677.serverFirst {
		t.Fatalf("server-first = %q, %v, %v; want %q", sf, done, err, rfc7677.serverFirst)
	}
	fin, done, err := s.Step([]byte(rfc7677.clientFinal))
	if err != nil || !done || string(fin) != rfc7677.serverFinal {
		t.Fatalf("server-final = %q, %v, %v; want %q", fin, done, err, rfc7677.serverFinal)
	}
	if s.User() != "user" {
		t.Fatalf("user %q", s.User())
	}
	if _, _, err := s.Step([]byte(rfc7677.clientFinal)); err == nil {
		t.Fatal("a third message was accepted")
	}
}

func TestScramRefusals(t *testing.T) {
	wrongPassword := rfcServer(t, "crayon")
	if _, _, err := wrongPassword.Step([]byte(rfc7677.clientFirst)); err != nil {
		t.Fatal(err)
	}
	_, _, errWrong := wrongPassword.Step([]byte(rfc7677.clientFinal))
	if !errors.Is(errWrong, ErrAuthenticationFailed) {
		t.Fatalf("wrong password: %v", errWrong)
	}

	// An unknown user gets a server-first like a known one, and fails at
	// the proof with the same error: nothing tells it apart.
	unknown := rfcServer(t, "pencil")
	sf, _, err := unknown.Step([]byte("n,,n=nobody,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil || !bytes.Contains(sf, []byte(",s=")) || !bytes.HasSuffix(sf, []byte(",i=4096")) {
		t.Fatalf("unknown user's server-first = %q, %v", sf, err)
	}
	again := rfcServer(t, "pencil")
	sf2, _, _ := again.Step([]byte("n,,n=nobody,r=rOprNGfwEbeRWgbNEkqO"))
	if !bytes.Equal(sf, sf2) {
		t.Fatalf("an unknown user's salt changes between tries: %q vs %q", sf, sf2)
	}
	_, _, errUnknown := unknown.Step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if errUnknown == nil || errUnknown.Error() != errWrong.Error() {
		t.Fatalf("unknown user: %v; wrong password: %v", errUnknown, errWrong)
	}

	for name, msgs := range map[string][2]string{
		"nonce changed":   {rfc7677.clientFirst, "c=biws,r=rOprNGfwEbeRWgbNEkqOX,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="},
		"bad binding":     {rfc7677.clientFirst, "c=eCws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="},
		"short proof":     {rfc7677.clientFirst, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA"},
		"authzid other":   {"n,a=admin,n=user,r=abc", ""},
		"channel binding": {"p=tls-unique,,n=user,r=abc", ""},
		"tokenauth":       {"n,,n=user,r=abc,tokenauth=true", ""},
		"no nonce":        {"n,,n=user", ""},
		"bad escape":      {"n,,n=us=er,r=abc", ""},
	} {
		s := rfcServer(t, "pencil")
		_, _, err := s.Step([]byte(msgs[0]))
		if err == nil && msgs[1] != "" {
			_, _, err = s.Step([]byte(msgs[1]))
		}
		if !errors.Is(err, ErrAuthenticationFailed) {
			t.Errorf("%s: %v, want authentication failed", name, err)
		}
	}
}

func TestScramSHA512RoundTrip(t *testing.T) {
	m, _ := Scram(MechanismScramSHA512)
	cred, err := m.NewCredential("secret", nil, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if len(cred.Salt) != 32 || len(cred.StoredKey) != 64 || len(cred.ServerKey) != 64 {
		t.Fatalf("credential sizes %d %d %d", len(cred.Salt), len(cred.StoredKey), len(cred.ServerKey))
	}
	if _, err := m.NewCredential("x", nil, 100); err == nil {
		t.Fatal("100 iterations accepted")
	}
	salted, _ := m.SaltPassword("secret", cred.Salt, 8192)
	if again := m.CredentialFromSalted(salted, cred.Salt, 8192); !bytes.Equal(again.StoredKey, cred.StoredKey) {
		t.Fatal("CredentialFromSalted differs from NewCredential")
	}
}

func TestSaslName(t *testing.T) {
	for _, n := range []string{"alice", "a,b", "a=b", "=2C"} {
		got, err := decodeSaslName(EncodeSaslName(n))
		if err != nil || got != n {
			t.Errorf("%q: %q %v", n, got, err)
		}
	}
}

func TestPlain(t *testing.T) {
	p := Plain{"alice": "alice-secret"}
	if u, err := p.Check([]byte("\x00alice\x00alice-secret")); err != nil || u != "alice" {
		t.Fatalf("good: %q %v", u, err)
	}
	if u, err := p.Check([]byte("alice\x00alice\x00alice-secret")); err != nil || u != "alice" {
		t.Fatalf("authzid = user: %q %v", u, err)
	}
	_, errWrong := p.Check([]byte("\x00alice\x00nope"))
	_, errUnknown := p.Check([]byte("\x00bob\x00nope"))
	if errWrong == nil || errUnknown == nil || errWrong.Error() != errUnknown.Error() {
		t.Fatalf("wrong password %v, unknown user %v: want the same error", errWrong, errUnknown)
	}
	for _, m := range []string{"", "alice", "\x00alice\x00", "\x00\x00pw", "bob\x00alice\x00alice-secret", "\x00alice\x00alice-secret\x00"} {
		if _, err := p.Check([]byte(m)); !errors.Is(err, ErrAuthenticationFailed) {
			t.Errorf("%q: %v", m, err)
		}
	}
}

func TestParseJAAS(t *testing.T) {
	j, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
	    username="admin" password="admin-secret"
	    user_admin="admin-secret" user_alice="a \"quoted\" one" serviceName=kafka;`)
	if err != nil {
		t.Fatal(err)
	}
	if j.LoginModule != PlainLoginModule || j.Flag != "required" || j.Options["username"] != "admin" || j.Options["serviceName"] != "kafka" {
		t.Fatalf("%+v", j)
	}
	users := j.PlainUsers()
	if len(users) != 2 || users["alice"] != `a "quoted" one` || users["admin"] != "admin-secret" {
		t.Fatalf("users %v", users)
	}
	for _, bad := range []string{
		"", "Foo", "Foo required", "Foo required a=b", `Foo required a="b;`, "Foo always;",
		"Foo required a=b; Bar required;", "Foo required a=b a=c;", "Foo required =b;", `Foo required a="b\`,
	} {
		if _, err := ParseJAAS(bad); !errors.Is(err, ErrBadJAAS) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestParseScramSpecs(t *testing.T) {
	specs, err := ParseScramSpecs(`SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[name=admin,password="a,b]"]`)
	if err != nil || len(specs) != 2 || specs[0].Attrs["iterations"] != "8192" || specs[1].Attrs["password"] != "a,b]" || specs[1].Attrs["name"] != "admin" {
		t.Fatalf("%+v %v", specs, err)
	}
	c, err := specs[0].Credential()
	if err != nil || c.Iterations != 8192 {
		t.Fatalf("%+v %v", c, err)
	}
	if specs, err := ParseScramSpecs("SCRAM-SHA-256,SCRAM-SHA-512"); err != nil || len(specs) != 2 || len(specs[1].Attrs) != 0 {
		t.Fatalf("delete form: %+v %v", specs, err)
	}
	// kafka-storage.sh's salted form gives the same keys as the password.
	m, _ := Scram(MechanismScramSHA256)
	salt := []byte("0123456789abcdef")
	want, _ := m.NewCredential("pw", salt, 4096)
	salted, _ := m.SaltPassword("pw", salt, 4096)
	sp := ScramSpec{Mechanism: MechanismScramSHA256, Attrs: map[string]string{
		"salt": base64.StdEncoding.EncodeToString(salt), "saltedpassword": base64.StdEncoding.EncodeToString(salted)}}
	if got, err := sp.Credential(); err != nil || !bytes.Equal(got.StoredKey, want.StoredKey) {
		t.Fatalf("salted form: %v", err)
	}
	for _, bad := range []string{"", "PLAIN=[password=x]", "SCRAM-SHA-256=[password=x", "SCRAM-SHA-256=password", `SCRAM-SHA-256=[password="x]`, "SCRAM-SHA-256=[a=1,a=2]"} {
		if _, err := ParseScramSpecs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, bad := range []string{"SCRAM-SHA-256=[iterations=10,password=x]", "SCRAM-SHA-256=[name=a]", "SCRAM-SHA-256=[password=x,saltedpassword=eA==]"} {
		specs, err := ParseScramSpecs(bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := specs[0].Credential(); err == nil {
			t.Errorf("%q: credential made", bad)
		}
	}
}

// TestScramLibrdkafkaNonce: librdkafka sends its nonce again before the
// server's full nonce; Kafka accepts a nonce that ends with the one it
// sent, and so does Sluice (the proof covers the message as sent).
func TestScramLibrdkafkaNonce(t *testing.T) {
	m, _ := Scram(MechanismScramSHA256)
	cred, _ := m.NewCredential("pencil", []byte("saltsaltsaltsalt"), 4096)
	s := NewScramServer(m, func(string) (Credential, bool) { return cred, true }, []byte("0123456789abcdef"))
	sf, _, err := s.Step([]byte("n,,n=user,r=abc"))
	if err != nil {
		t.Fatal(err)
	}
	full := strings.TrimPrefix(strings.Split(string(sf), ",")[0], "r=")
	without := "c=biws,r=abc" + full
	salted, _ := m.SaltPassword("pencil", []byte("saltsaltsaltsalt"), 4096)
	clientKey := m.hmac(salted, "Client Key")
	sig := m.hmac(m.h(clientKey), "n=user,r=abc,"+string(sf)+","+without)
	proof := make([]byte, len(sig))
	for i := range sig {
		proof[i] = clientKey[i] ^ sig[i]
	}
	if _, done, err := s.Step([]byte(without + ",p=" + base64.StdEncoding.EncodeToString(proof))); err != nil || !done {
		t.Fatalf("librdkafka's nonce: %v", err)
	}
	other := NewScramServer(m, func(string) (Credential, bool) { return cred, true }, []byte("0123456789abcdef"))
	other.Step([]byte("n,,n=user,r=abc"))
	if _, _, err := other.Step([]byte("c=biws,r=abc,p=" + base64.StdEncoding.EncodeToString(proof))); err == nil {
		t.Fatal("a nonce without the server's part was accepted")
	}
}
