package kafka

import (
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/node/sasl"
)

// FuzzSASLConnection feeds a byte stream to a connection of a SASL
// listener, through the real reader, SASL state machine and writer (over
// net.Pipe), with passwords no input can guess: whatever the stream, the
// connection never authenticates and the Broker is never asked anything
// (no Metadata served), and nothing panics.
func FuzzSASLConnection(f *testing.F) {
	rf := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	hs := func(mech string) []byte {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Version, r.Mechanism = 1, mech
		return rf.AppendRequest(nil, r, 1)
	}
	auth := func(tok string, v int16) []byte {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.Version, r.SASLAuthBytes = v, []byte(tok)
		return rf.AppendRequest(nil, r, 2)
	}
	meta := rf.AppendRequest(nil, kmsg.NewPtrMetadataRequest(), 3)
	av := rf.AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 0)
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	f.Add(cat(av, hs("PLAIN"), auth("\x00alice\x00guess", 2), meta))
	f.Add(cat(hs("SCRAM-SHA-256"), auth("n,,n=bob,r=abcdef", 1), auth("c=biws,r=abcdef,p=AAAA", 1), meta))
	f.Add(cat(hs("SCRAM-SHA-512"), auth("n,a=bob,n=bob,r=x", 0), hs("PLAIN"), meta))
	f.Add(cat(meta, hs("PLAIN")))
	f.Add(cat(hs("GSSAPI"), av))
	f.Fuzz(func(t *testing.T, stream []byte) {
		m, _ := sasl.Scram(sasl.MechanismScramSHA256)
		cred, err := m.NewCredential("fuzz-cannot-guess-this-7f3a9c", []byte("0123456789abcdef"), 4096)
		if err != nil {
			t.Fatal(err)
		}
		fb := newFakeBroker("127.0.0.1:9092")
		s, err := NewServer(fb, Options{MaxRequestBytes: fuzzMaxFrame})
		if err != nil {
			t.Fatal(err)
		}
		cfg := &SASL{
			Mechanisms: []string{sasl.MechanismPlain, sasl.MechanismScramSHA256, sasl.MechanismScramSHA512},
			Plain:      sasl.Plain{"alice": "fuzz-cannot-guess-this-7f3a9c"},
			Scram:      func(string, string) (sasl.Credential, bool) { return cred, true },
		}
		client, server := net.Pipe()
		s.startConn(server, "SASL", Security{SASL: cfg})
		go func() { _, _ = io.Copy(io.Discard, client) }()
		_, _ = client.Write(stream)
		_ = client.Close()
		_ = s.Close()
		if st := s.ConnStats(); st.SASLAuthenticatedBy["SASL"] != 0 {
			t.Fatalf("authenticated without a password: %+v", st)
		}
		if n := fb.queryCount(); n != 0 {
			t.Fatalf("%d Metadata requests served before authentication", n)
		}
	})
}
