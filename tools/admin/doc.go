// Package admin is Sluice's admin CLI: `sluice topics` (create, delete,
// list, describe, alter --partitions; internal topics such as
// __consumer_offsets only with --include-internal), `sluice configs`,
// `sluice groups` (kafka-consumer-groups.sh), `sluice transactions`
// (kafka-transactions.sh), `sluice features` (kafka-features.sh:
// describe through ApiVersions, upgrade, downgrade and disable through
// UpdateFeatures), `sluice quorum describe
// --status|--replication` (kafka-metadata-quorum.sh, through
// DescribeQuorum), `sluice topics reassign` (kafka-reassign-partitions.sh),
// `sluice cluster health|info|decommission|unregister`, and the client-side
// checks `sluice produce`, `sluice consume` (direct partition assignment,
// or a consumer group member with --group) and `sluice perf
// produce|consume` (Kafka's perf-test lines). It speaks only the Kafka
// APIs (through franz-go), so it works against Apache Kafka too, and
// Kafka's own tools work against Sluice.
//
// Consumer groups, as kafka-consumer-groups.sh has them:
//   - `groups list [--state S,...] [--type classic|consumer]`: names; a
//     filter (or a bare --state/--type) adds its column;
//   - `groups describe G...|--all-groups` in one of three views, each in
//     Kafka's columns: --offsets (the default; GROUP TOPIC PARTITION
//     CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID, a row
//     per partition assigned or committed), --members [--verbose] and
//     --state. Classic groups come from DescribeGroups, KIP-848 groups
//     (which DescribeGroups does not know) from ConsumerGroupDescribe;
//     --format json gives every view at once;
//   - `groups reset-offsets --group G --topic T[:P,...]|--all-topics` with
//     one of --to-earliest, --to-latest, --to-current, --to-offset N,
//     --shift-by N, --to-datetime T, --by-duration D, each new offset kept
//     within the partition's log start and end as Kafka does. Without
//     --execute it is a dry run (with Kafka's warning). It is refused, with
//     Kafka's message, unless the group is Empty or Dead;
//   - `groups delete --group G...` (Kafka's NON_EMPTY_GROUP while it has
//     members) and `groups delete-offsets --group G --topic T[:P,...]`.
//
// Transactions, as kafka-transactions.sh has them (Kafka's columns,
// each cell padded to its column's widest value and followed by a tab):
//   - `transactions list [--duration-filter MS]
//     [--transactional-id-pattern RE]`: TransactionalId Coordinator
//     ProducerId TransactionState, from every broker's ListTransactions;
//   - `transactions describe --transactional-id ID`: its coordinator,
//     producer id and epoch, state, timeout, start (None when no
//     transaction runs), duration and partitions ("topic-partition");
//   - `transactions describe-producers --topic T --partition P
//     [--broker-id B]`: the partition's active producers on its leader
//     (or on replica B), with CurrentTransactionStartOffset (None: no
//     open transaction);
//   - `transactions abort --topic T --partition P --start-offset O`
//     finds the producer whose open transaction starts at O and writes
//     an abort marker for it (WriteTxnMarkers to the leader, which needs
//     CLUSTER_ACTION); without --start-offset, --producer-id,
//     --producer-epoch and --coordinator-epoch name it (a coordinator
//     epoch of -1 is sent as 0, as Kafka's tool does);
//   - `transactions find-hanging --topic T [--partition P] | --broker-id B
//     [--max-transaction-timeout MIN]` (15 by default): the open
//     transactions whose producer last wrote more than MIN minutes ago
//     and whose coordinator does not know them (no transactional id lists
//     their producer id, the id is not found, or its description does not
//     name the partition); exit status 2 when there are any, naming the
//     abort that ends the first.
//
// `consume --group G` joins as a member (kgo), starts at the group's
// committed offsets (--from-beginning: the earliest where it has none),
// marks each record after printing it and commits the marks every second
// and before it leaves, so a record is committed only once printed. `perf
// consume --group` reports rebalance.time.ms as Kafka's perf test does:
// time spent without an assignment, from the start and after each
// revocation; the fetch.* columns leave it out.
//
// Moving replicas (reassign.go), as kafka-reassign-partitions.sh with its
// JSON files (TopicsToMove, Reassignment):
//   - `topics reassign --generate --topics-to-move-json-file F
//     --broker-list 1,2,3` prints the current assignment and a proposal
//     (Kafka's placement from the first broker listed, rack-aware when the
//     brokers have racks (ProposeRackAware; --disable-rack-aware), each
//     partition keeping its replication factor);
//   - `--execute --reassignment-json-file F` starts the moves
//     (AlterPartitionReassignments) and prints the current assignment to
//     keep for a rollback; `--verify` says per partition whether the move
//     completed, is in progress (with the adding and removing replicas,
//     from ListPartitionReassignments) or the replicas differ from the
//     file (exit 2 until every one completed); `--cancel` cancels the
//     moves in progress. `--execute --throttle N` first sets the moving
//     topics' *.replication.throttled.replicas (current replicas as
//     leaders, added ones as followers) and both throttle rates on every
//     broker involved (reassign_throttle.go); `--verify`, once every
//     partition completed, removes them ("Throttle was removed.").
//   - `cluster decommission --broker-id N` plans a reassignment that
//     replaces N in every partition by the live broker outside the
//     partition hosting the fewest replicas (DecommissionPlan), starts it
//     and prints "k of m partitions moved off broker N" as the count
//     changes, until done or --wait (10m; exit 2), then unregisters the
//     broker (UnregisterBroker): stop it afterwards. `cluster unregister
//     --id N` is kafka-cluster.sh unregister alone.
//   - `cluster remove-controller --controller-id N` and `cluster
//     add-controller --controller-id N [--controller-endpoint H:P]
//     [--controller-directory-id D]` are kafka-metadata-quorum.sh's
//     (KIP-853): RemoveRaftVoter and AddRaftVoter (controllers.go), the
//     steps around a replacement controller formatted with `sluice init
//     --no-initial-controllers` (docs/deploy.md).
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
