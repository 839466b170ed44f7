// Package initcmd formats a node's directory before its first start, like
// Kafka's `kafka-storage format`, and lets a node check, when it starts, that
// its directory was formatted for the cluster it is about to join.
//
// # meta.properties
//
// A formatted directory holds meta.properties, a Java-properties file:
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
// non-voter. The file is written to a temporary name, fsynced and renamed.
//
// # Commands
//
//	sluice init --dir D --cluster-id ID --node-id N --initial-controllers 1@h:p,...
//	sluice init --dir D --cluster-id ID --node-id N --standalone --controller-addr h:p
//	sluice init random-uuid
//
// init refuses a directory that already holds meta.properties; with
// --ignore-formatted it leaves such a directory untouched and succeeds.
package initcmd
