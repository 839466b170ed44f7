// Package nodecmd is `sluice node`: it loads the configuration (node/config),
// opens a node.Node and runs it until SIGINT or SIGTERM, then closes it
// cleanly. Test-only filesystems (the power-loss journal of sluice soak) are
// chosen here and passed in through node.Options, so node/ never imports
// tools/.
package nodecmd
