// Package initcmd formats a node's directory before its first start, like
// Kafka's `kafka-storage format` (meta.properties, see node/meta).
//
// The file and its format belong to node/meta; this package is the command.
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
