// Package nodecmd is `sluice node`: it loads the configuration (node/config),
// opens a node.Node and runs it until SIGINT or SIGTERM, then closes it
// cleanly; SIGHUP rereads the SSL listeners' certificate files
// (node.Node.ReloadTLS) and, from the configuration,
// sluice.gossip.encryption.keys (node.Node.SetGossipKeys; other keys take
// effect at the next start). With initial.controllers and cluster.id set it first formats an
// empty data directory (config.FormatIfEmpty), as Kafka's container image
// formats its storage at every start with --ignore-formatted; the image of
// deploy/ relies on it. Test-only filesystems (the power-loss journal of sluice soak) are
// chosen here and passed in through node.Options, so node/ never imports
// tools/.
package nodecmd
