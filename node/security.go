package node

import "time"

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
