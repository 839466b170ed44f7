package node

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluice-log/sluice/node/config"
)

// ReloadTLS rereads the keystore and truststore files of every SSL
// listener, the CONTROLLER's included (config.ListenerTLS.Reload): new
// handshakes, served and dialled, use them; connections already open keep
// theirs. It logs what changed and what failed to load (the listener then
// keeps its certificates). `sluice node` calls it on SIGHUP, and the node
// every sluice.ssl.reload.interval.ms.
func (n *Node) ReloadTLS() {
	changed, err := n.cfg.ReloadTLS()
	for _, name := range changed {
		lt := n.cfg.TLS[name]
		n.log.Info("node: reloaded the listener's keystore and truststore; new connections use them",
			"listener", name, "subject", lt.Leaf().Subject.String(), "not_after", lt.Leaf().NotAfter)
		if name == config.ListenerController && n.ctrl != nil {
			// Kept forwarding connections were made with the old
			// certificates: the next forwards dial with the new ones.
			n.ctrl.ResetForwardConns()
		}
	}
	if err != nil {
		n.log.Error("node: certificate reload failed; the listener keeps its current certificates until the files load", "err", err)
	}
}

// tlsReloadLoop calls ReloadTLS every interval until the node stops.
func (n *Node) tlsReloadLoop(interval time.Duration) {
	defer n.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			n.ReloadTLS()
		}
	}
}

// authorizeControllerPeer admits a peer of the CONTROLLER listener (mutual
// TLS) when the authorizer is on: its certificate's principal, mapped by
// ssl.principal.mapping.rules, must be in super.users. Kafka's controller
// checks CLUSTER_ACTION for the same requests, which brokers have as super
// users; a client certificate signed by the same CA is refused.
func (n *Node) authorizeControllerPeer(cert *x509.Certificate) error {
	dn := cert.Subject.String()
	name, err := n.cfg.PrincipalRules.Map(dn)
	if err != nil {
		return fmt.Errorf("ssl.principal.mapping.rules map no principal from the certificate %q: %w", dn, err)
	}
	if p := "User:" + name; !slices.Contains(n.cfg.SuperUsers, p) {
		return fmt.Errorf("the certificate's principal %s is not in super.users: with authorizer.class.name set, only super users (every broker and controller) may use the controller port; add the nodes' principals to super.users, or give clients certificates from another CA than listener.name.controller.ssl.truststore.location trusts", p)
	}
	return nil
}

// authorizePeerNode admits a controller-port peer whose hello says it is
// node id only if its certificate's principal, mapped by
// ssl.principal.mapping.rules, is that node's under
// sluice.node.principal.pattern: one member's certificate cannot speak
// for another in raft or forwarding.
func (n *Node) authorizePeerNode(cert *x509.Certificate, id int32) error {
	dn := cert.Subject.String()
	name, err := n.cfg.PrincipalRules.Map(dn)
	if err != nil {
		return fmt.Errorf("ssl.principal.mapping.rules map no principal from the certificate %q: %w", dn, err)
	}
	if got, want := "User:"+name, n.cfg.NodePrincipalOf(id); got != want {
		return fmt.Errorf("the certificate's principal %s is not node %d's %s (sluice.node.principal.pattern): a node's certificate must name it, so that no member can speak for another", got, id, want)
	}
	return nil
}

// SetGossipKeys replaces the gossip encryption keys of the running node
// (quorum.Gossip.SetKeys): keys[0] encrypts, every key decrypts. `sluice
// node` calls it on SIGHUP with sluice.gossip.encryption.keys reread from
// its configuration, so the three steps of a rotation need no restart.
func (n *Node) SetGossipKeys(keys [][]byte) error {
	if n.gossip == nil {
		return errors.New("node: no GOSSIP listener: sluice.gossip.encryption.keys has nothing to encrypt")
	}
	return n.gossip.SetKeys(keys)
}
