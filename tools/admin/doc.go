// Package admin is Sluice's admin CLI: `sluice topics` (create, delete,
// list, describe, alter --partitions), `sluice configs`, `sluice quorum
// describe --status|--replication` (kafka-metadata-quorum.sh, through
// DescribeQuorum) and `sluice cluster health|info`, and the client-side
// checks `sluice produce`, `sluice consume` (direct partition assignment,
// no consumer group) and `sluice perf produce|consume` (Kafka's perf-test
// lines). It speaks only the Kafka APIs (through franz-go), so it works
// against Apache Kafka too, and Kafka's own tools work against Sluice.
//
// Conventions, after kafka-topics.sh, kafka-configs.sh and rpk:
//   - --bootstrap-server HOST:PORT,... (default: $SLUICE_CLI_BOOTSTRAP_SERVERS,
//     else the local cluster's cluster.json, else 127.0.0.1:9092);
//   - text output in Kafka's shape, or --format json for scripts;
//   - exit status 0 on success, 1 on an error, 2 when a describe filter or
//     health check finds a problem (so scripts can tell "broken" from
//     "could not ask");
//   - progress on standard error, never on standard output: `topics
//     create|delete` of more than 100 topics send them in batches of 100
//     and say "created N of M topics" after each.
//
// Each command is a struct whose fields are its flags, with a run method;
// the cobra closure only binds them. Every command reaches the cluster
// through one prologue, (*common).with:
//
//	func (c *infoCmd) run(ctx context.Context, w io.Writer) error {
//		return c.with(ctx, func(s session) error {
//			md, err := s.adm.BrokerMetadata(s.ctx)
//			if err != nil {
//				return c.unreachable(err)
//			}
//			...
//		})
//	}
package admin
