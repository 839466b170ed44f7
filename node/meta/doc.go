// Package meta reads and writes a node directory's meta.properties, the file
// that marks the directory as formatted for one cluster and one node, like
// Kafka's MetaProperties. `sluice init` (tools/initcmd) writes it; a node
// calls Verify before it opens anything else in the directory.
//
// # meta.properties
//
// A Java-properties file:
//
//	# written by sluice init; do not edit
//	version=1
//	cluster.id=<22-character base64url UUID>
//	node.id=<int>
//	directory.id=<22-character base64url UUID, random per directory>
//	initial.controllers=1@host:9093,2@host:9093,3@host:9093
//
// initial.controllers is the voter set that bootstraps the metadata quorum:
// a node whose id is in it starts as a Raft voter and bootstraps with that
// list; any other node is a broker that asks those controllers to add it as a
// non-voter. Empty (`sluice init --no-initial-controllers`, KIP-853's
// flag) is a replacement controller's directory: the node never
// bootstraps, it joins the running quorum (controller.quorum.voters) as
// an observer until `sluice cluster add-controller` makes it a voter
// (quorum/voters.go). Format writes the file to a temporary name, fsyncs it, renames
// it and fsyncs the directory.
//
// bootstrap.json (BootstrapFile), written by `sluice init --add-scram`,
// holds the SCRAM credentials a new cluster starts with (salt, stored
// and server keys, iterations: never a password); the first active
// controller writes them with the cluster id, as Kafka's
// bootstrap.checkpoint.
//
// A typical start:
//
//	m, err := meta.Verify(dir, clusterID, nodeID)
//	if err != nil {
//		return err // says which `sluice init` to run
//	}
//	// open the logs and the quorum for m.ClusterID ...
package meta
