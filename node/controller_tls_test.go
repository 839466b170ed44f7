package node

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-log/sluice/node/tlstest"
	"github.com/sluice-log/sluice/quorum"
)

// rawForward speaks the controller port's forwarding protocol by hand
// (quorum/hello.go, quorum/forward.go), as a process outside the cluster
// would: over TLS with cfg (nil: plaintext), a hello naming clusterID and
// node 2, one request frame; it returns the response frame.
func rawForward(addr string, cfg *tls.Config, clusterID, req string) (string, error) {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	conn := nc
	if cfg != nil {
		tc := tls.Client(nc, cfg)
		if err := tc.Handshake(); err != nil {
			return "", fmt.Errorf("handshake: %w", err)
		}
		conn = tc
	}
	b := append([]byte{0xC5, 1, byte(len(clusterID))}, clusterID...)
	b = binary.BigEndian.AppendUint32(b, 2)
	b = append(b, 0xF5)
	b = binary.BigEndian.AppendUint32(b, uint32(len(req)))
	b = append(b, req...)
	if _, err := conn.Write(b); err != nil {
		return "", fmt.Errorf("write: %w", err)
	}
	br := bufio.NewReader(conn)
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return "", fmt.Errorf("read: %w", err)
	}
	body := make([]byte, min(binary.BigEndian.Uint32(hdr[:]), 1<<20))
	if _, err := io.ReadFull(br, body); err != nil {
		return "", fmt.Errorf("read: %w", err)
	}
	return string(body), nil
}

// TestControllerSSL: three nodes whose CONTROLLER listener is SSL (mutual
// TLS): the quorum elects, replicates and forwards over it (a topic
// created through every node, acks=all produce). A process outside the
// cluster that knows the cluster id (Metadata tells it) sends
// fence_broker for a live broker, with its right epoch, to the active
// controller: in plaintext, over TLS without a certificate and with a
// certificate of another CA, it is refused at the handshake; with a
// client certificate of the cluster's CA whose principal is not in
// super.users (the authorizer is on) right after it; each refusal is
// counted and the broker stays unfenced. A node's certificate is served
// (the control). Then the keystore file is replaced: each node's
// controller port presents the new certificate to new handshakes
// (sluice.ssl.reload.interval.ms) and the quorum goes on working.
func TestControllerSSL(t *testing.T) {
	pki := newTestPKI(t)
	nodes := startClusterWith(t, 3, "PLAINTEXT",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL", "controller.listener.names=CONTROLLER",
		"ssl.keystore.location="+pki.keystore, "ssl.truststore.location="+pki.truststore,
		"sluice.ssl.reload.interval.ms=100",
		// Only super users may use the controller port once the
		// authorizer is on; anyone may do the rest (no ACLs).
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:CN=broker", "allow.everyone.if.no.acl.found=true")
	ctx := testCtx(t)
	// Every node forwards a CreateTopics to the active controller.
	for i, tn := range nodes {
		if _, err := kadm.NewClient(newClient(t, tn)).CreateTopic(ctx, 1, 3, nil, fmt.Sprintf("ctl-%d", i)); err != nil {
			t.Fatalf("create topic through node %d: %v", i+1, err)
		}
	}
	prod := newClient(t, nodes[1], kgo.DefaultProduceTopic("ctl-0"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("over mTLS")}).FirstErr(); err != nil {
		t.Fatalf("acks=all produce: %v", err)
	}

	var leader *testNode
	for _, tn := range nodes {
		if tn.ctrl.IsLeader() {
			leader = tn
		}
	}
	if leader == nil {
		t.Fatal("no active controller")
	}
	victim := int32(2)
	if leader.cfg.NodeID == victim {
		victim = 3
	}
	state := func() (bool, int64) {
		var fenced bool
		var epoch int64
		leader.ctrl.View(func(im *quorum.Image) {
			b := im.Brokers[victim]
			fenced, epoch = b.Fenced, b.Epoch
		})
		return fenced, epoch
	}
	fenced, epoch := state()
	if fenced {
		t.Fatalf("broker %d fenced before the attack", victim)
	}
	cid, addr := leader.clusterID, leader.ControllerAddr()
	fence := fmt.Sprintf(`{"op":"propose","type":"fence_broker","cmd":{"id":%d,"epoch":%d}}`, victim, epoch)

	// Controls: a node's certificate (a super user's) is served, and the
	// command format reaches the controller (a fence of an unknown broker
	// is refused by the controller itself, not by the port).
	trusted := &tls.Config{RootCAs: pki.ca.Pool(), Certificates: []tls.Certificate{pki.broker.TLS()}, ServerName: "127.0.0.1"}
	if resp, err := rawForward(addr, trusted, cid, `{"op":"status"}`); err != nil || !strings.Contains(resp, `"code":0`) {
		t.Fatalf("status with a trusted certificate: %q, %v", resp, err)
	}
	if resp, err := rawForward(addr, trusted, cid, `{"op":"propose","type":"fence_broker","cmd":{"id":99,"epoch":1}}`); err != nil || strings.Contains(resp, `"code":0`) || !strings.Contains(resp, `"code"`) {
		t.Fatalf("fence of an unknown broker with a trusted certificate: %q, %v (want the controller's refusal)", resp, err)
	}

	stranger, err := tlstest.NewCA("stranger")
	if err != nil {
		t.Fatal(err)
	}
	forged, err := stranger.Issue("broker", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	before := leader.ctrl.RaftStats().RefusedConns
	for _, a := range []struct {
		name string
		cfg  *tls.Config
	}{
		{"plaintext", nil},
		{"TLS without a certificate", &tls.Config{RootCAs: pki.ca.Pool(), ServerName: "127.0.0.1"}},
		{"TLS with another CA's certificate", &tls.Config{RootCAs: pki.ca.Pool(), Certificates: []tls.Certificate{forged.TLS()}, ServerName: "127.0.0.1"}},
		{"TLS trusting anything, another CA's certificate", &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{forged.TLS()}}},
		{"TLS with a client's certificate of the same CA (not a super user)", &tls.Config{RootCAs: pki.ca.Pool(), Certificates: []tls.Certificate{pki.client.TLS()}, ServerName: "127.0.0.1"}},
	} {
		if resp, err := rawForward(addr, a.cfg, cid, fence); err == nil {
			t.Fatalf("%s: fence_broker answered %q", a.name, resp)
		}
	}
	if got := leader.ctrl.RaftStats().RefusedConns - before; got != 5 {
		t.Fatalf("the controller port counted %d refusals of 5 attempts", got)
	}
	if f, e := state(); f || e != epoch {
		t.Fatalf("broker %d after the attacks: fenced %v, epoch %d (was %d)", victim, f, e, epoch)
	}

	// Renew the certificate in the keystore file: every node's controller
	// port presents it to new handshakes, and the quorum keeps working.
	renewed, err := pki.ca.Issue("broker", "127.0.0.1", "localhost") // same name, new key
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pki.keystore, renewed.KeyStorePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	renewedDER := renewed.TLS().Certificate[0]
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for _, tn := range nodes {
		for {
			nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", tn.ControllerAddr(), trusted)
			if err != nil {
				t.Fatal(err)
			}
			got := nc.ConnectionState().PeerCertificates[0].Raw
			nc.Close()
			if bytes.Equal(got, renewedDER) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("node %d's controller port still presents the old certificate", tn.cfg.NodeID)
			case <-tick.C:
			}
		}
	}
	for i, tn := range nodes {
		if _, err := kadm.NewClient(newClient(t, tn)).CreateTopic(ctx, 1, 3, nil, fmt.Sprintf("renewed-%d", i)); err != nil {
			t.Fatalf("create topic through node %d after the renewal: %v", i+1, err)
		}
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("after renewal")}).FirstErr(); err != nil {
		t.Fatalf("acks=all produce after the renewal: %v", err)
	}
}

// TestGossipEncryptedCluster: three nodes with sluice.gossip.encryption.keys
// start, which needs gossip (the active controller unfences each broker
// when gossip shows its registered epoch). A memberlist that knows the
// cluster's label but not the key, or has another key, cannot join under
// a broker's name; one with the key can (the control).
func TestGossipEncryptedCluster(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	c := startReplCluster(t, 3, "sluice.gossip.encryption.keys="+base64.StdEncoding.EncodeToString(key))
	label := "sluice/" + c.nodes[0].clusterID
	join := func(name string, keys ...[]byte) error {
		mc := memberlist.DefaultLANConfig()
		mc.Name, mc.BindAddr, mc.BindPort, mc.Label, mc.LogOutput = name, "127.0.0.1", 0, label, io.Discard
		if len(keys) > 0 {
			kr, err := memberlist.NewKeyring(keys, keys[0])
			if err != nil {
				t.Fatal(err)
			}
			mc.Keyring = kr
		}
		ml, err := memberlist.Create(mc)
		if err != nil {
			t.Fatal(err)
		}
		defer ml.Shutdown()
		_, err = ml.Join(c.seeds)
		if err == nil {
			_ = ml.Leave(time.Second)
		}
		return err
	}
	if err := join("2"); err == nil {
		t.Fatal("a memberlist without the key joined as broker 2")
	}
	if err := join("2", bytes.Repeat([]byte{8}, 32)); err == nil {
		t.Fatal("a memberlist with another key joined as broker 2")
	}
	if err := join("99", key); err != nil {
		t.Fatalf("the control, with the key: %v", err)
	}
	c.nodes[0].ctrl.View(func(im *quorum.Image) {
		for id := int32(1); id <= 3; id++ {
			if b := im.Brokers[id]; b == nil || !b.Alive() {
				t.Errorf("broker %d: %+v", id, b)
			}
		}
	})
}
