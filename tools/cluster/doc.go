// Package cluster is `sluice cluster`: a local cluster of real node processes
// on 127.0.0.1, for the demo, the soak and bench tools, and people trying
// Sluice out.
//
//	sluice cluster start   --nodes 3 --dir DIR   format, start, wait until healthy
//	sluice cluster status  --dir DIR             which nodes run, what the cluster says
//	sluice cluster stop    --dir DIR             SIGTERM every node (clean shutdown)
//	sluice cluster kill    --dir DIR NODE        SIGKILL one node
//	sluice cluster restart --dir DIR NODE        start one stopped or killed node again
//	sluice cluster roll    --dir DIR             restart every node, one at a time
//
// Every node is controller and broker. Node i listens on the default ports
// plus PortStep*i (Kafka 9092, controller 9093, gossip 7946, HTTP 9644), keeps
// its data under DIR/node-i/data, its config in DIR/node-i/server.properties
// and its output in DIR/node-i/node.log. DIR/cluster.json describes the
// cluster for scripts (Layout), including any extra `sluice node` arguments
// and cgroup a node was started with (Options.NodeArgs, NodeCgroup: used by
// sluice soak), which restarts reuse. Starting over a running cluster in the same
// DIR stops it and replaces it.
//
// server.properties and cluster.json are written atomically (temporary
// file, fsync, rename, fsync of the directory), so a power cut leaves the
// old or the new file, never an empty one. A restart returns once the
// node's process has bound its controller port, its last listener, and
// still runs; a node that exits at once (a bad setting, a port in use) is
// an error quoting its last log lines, and cluster.json keeps the old pid.
//
// start --secure (secure.go) starts a cluster locked down as a newcomer's
// production one should be: one SASL_SSL Kafka listener (a CA made for
// the cluster, SCRAM-SHA-512, brokers authenticating to each other as
// the "broker" user) and the StandardAuthorizer, with DIR/client.properties
// (the admin super user's settings, which `sluice` commands in DIR's
// parent use by default and Kafka's tools take with --command-config)
// and DIR/kcat.conf (kcat -F). The controller port speaks mutual TLS with
// the nodes' certificates (their CN=sluice-node-N principals are super
// users, which the controller port requires with the authorizer on), and
// gossip is encrypted with a key made for the cluster; the HTTP port
// stays on 127.0.0.1 in plaintext.
//
// A roll (Roll) restarts the nodes one at a time, the active controller
// last: SIGTERM, so the node's controlled shutdown (controlled.shutdown.enable)
// moves its leaderships away before it closes; wait for the exit; start it
// again; and wait until Metadata lists it as a broker and in the ISR of every
// partition it replicates before the next node goes. It refuses to start
// while a node is down, and stops at a node that does not come back, saying
// which partitions wait and how to resume.
package cluster
