package config

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// Security holds the settings of the node's own ports' security that are
// not a Kafka listener's: gossip encryption and certificate reloads. The
// CONTROLLER listener's TLS is in Config.TLS with the Kafka listeners'.
type Security struct {
	// GossipKeys (sluice.gossip.encryption.keys) encrypt and authenticate
	// gossip (memberlist's keyring, AES-GCM): the first encrypts what
	// this node sends, every one is tried on what it receives, so a key
	// can be rotated in one node at a time (docs/deploy.md; `sluice node`
	// rereads them on SIGHUP). Empty: gossip is not encrypted.
	GossipKeys [][]byte
	// TLSReloadInterval (sluice.ssl.reload.interval.ms): every SSL
	// listener's keystore and truststore files are reread this often and,
	// when they changed, new handshakes use them (ListenerTLS.Reload); 0:
	// only on SIGHUP.
	TLSReloadInterval time.Duration
	// NodePrincipal (sluice.node.principal.pattern, identity.go): the
	// principal of node {id}; "" leaves node ids unchecked.
	NodePrincipal string
	// OAuthBearer: the broker's sasl.oauthbearer.* keys (oauth.go); each
	// OAUTHBEARER listener's are in its ListenerSASL.OAuth.
	OAuthBearer OAuthBearer
}

// gossipKeysKey is the one secret among securityKeys (Sensitive).
const gossipKeysKey = "sluice.gossip.encryption.keys"

// securityKeys are the keys of Security, and Kafka's
// controller.listener.names.
var securityKeys = []key{
	{"controller.listener.names", ListenerController, "the controller listener's name: CONTROLLER (Sluice's; set its protocol in listener.security.protocol.map: PLAINTEXT, or SSL for mutual TLS)", func(_ *Config, v string) error {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" && !strings.EqualFold(n, ListenerController) {
				return fmt.Errorf("Sluice's controller listener is named %s: name it so in listeners and here", ListenerController)
			}
		}
		return nil
	}},
	{gossipKeysKey, "", "base64 keys of 16, 24 or 32 bytes (AES-128/192/256), comma-separated: the first encrypts gossip, all decrypt it (rotation); empty: gossip in the clear", func(c *Config, v string) error {
		for i, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k == "" {
				continue
			}
			b, err := base64.StdEncoding.DecodeString(k)
			if err != nil {
				return fmt.Errorf("key %d is not base64 (make one with `openssl rand -base64 32`): %v", i+1, err)
			}
			if n := len(b); n != 16 && n != 24 && n != 32 {
				return fmt.Errorf("key %d has %d bytes: want 16, 24 or 32 (`openssl rand -base64 32`)", i+1, n)
			}
			c.GossipKeys = append(c.GossipKeys, b)
		}
		return nil
	}},
	{"sluice.ssl.reload.interval.ms", "60000", "reread every SSL listener's keystore and truststore files this often and use them for new handshakes when they changed; 0: only on SIGHUP", func(c *Config, v string) error {
		return parseMs(&c.TLSReloadInterval, v, 0)
	}},
}

// internalProtocolError refuses protocol p for CONTROLLER, HTTP or GOSSIP.
func internalProtocolError(listener, p string) error {
	switch listener {
	case ListenerController:
		return fmt.Errorf("%w: listener.security.protocol.map: %s:%s: the %s listener speaks PLAINTEXT or SSL (mutual TLS with the ssl.* keys or listener.name.controller.ssl.*)", ErrInvalid, listener, p, listener)
	case ListenerGossip:
		return fmt.Errorf("%w: listener.security.protocol.map: %s:%s: the %s listener speaks PLAINTEXT only; encrypt gossip with %s", ErrInvalid, listener, p, listener, gossipKeysKey)
	}
	return fmt.Errorf("%w: listener.security.protocol.map: %s:%s: the %s listener speaks PLAINTEXT or SSL (HTTPS with the ssl.* keys or listener.name.%s.ssl.*)", ErrInvalid, listener, p, listener, strings.ToLower(listener))
}
