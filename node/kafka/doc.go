// Package kafka is Sluice's Kafka protocol server: it accepts client
// connections, reads size-prefixed request frames, decodes them with franz-go's
// kmsg, dispatches each to the handler of its API, and writes the responses.
// What the answers say comes from a Broker, the small interface the node
// implements over the metadata quorum and the partition replicas, and from
// optional capabilities of it (TopicAdmin) that switch their APIs on.
//
// APIs spoken today: ApiVersions 0-3, Metadata 0-12, DescribeCluster 0-1,
// FindCoordinator 0-6 (groups with a Groups, transactional ids with
// Transactions, refusing each without);
// with a TopicAdmin CreateTopics 0-7 and DeleteTopics 0-6 (request
// validation here, the work in the Broker); with Logs Produce 3-12 (listed
// from 0 for librdkafka's sake; transactional batches, verified through a
// TxnVerifier, added to their transaction from v12), Fetch 4-12 (4-15 when the Logs is also a
// TopicNames: topics by ID, KIP-903's ReplicaState; read_committed up to
// the last stable offset with the aborted transactions), ListOffsets 0-8
// (both isolation levels) and OffsetForLeaderEpoch 0-4; with TxnMarkers
// WriteTxnMarkers 0-1 (brokers only; committed markers on
// __consumer_offsets told to a GroupTxns); with ProducerStates
// DescribeProducers 0 (txn_data.go holds the transactional
// capabilities); with ProducerIDs InitProducerId 0-5; with
// Configs DescribeConfigs 0-4 and IncrementalAlterConfigs 0-1; with an
// Elector ElectLeaders 0-2; with a Reassigner AlterPartitionReassignments
// 0-1 and ListPartitionReassignments 0; with an Unregisterer UnregisterBroker 0;
// with a VoterAdmin AddRaftVoter 0-1 and RemoveRaftVoter 0 (KIP-853);
// with Features UpdateFeatures 0-2 (update_features.go: the quorum's
// feature levels, KIP-584, which ApiVersions v3+ then lists);
// with a QuorumDescriber DescribeQuorum 0-2; with
// a PartitionAdmin CreatePartitions 0-3; SaslHandshake 1 (listed from 0)
// and SaslAuthenticate 0-2 on every listener (ILLEGAL_SASL_STATE outside
// a SASL exchange); with a ScramAdmin DescribeUserScramCredentials 0 and
// AlterUserScramCredentials 0; with a QuotaAdmin DescribeClientQuotas 0-1
// and AlterClientQuotas 0-1, and the client quotas enforced on every
// request (quotas.go: byte rates and request time, throttle_time_ms and
// a muted connection as KIP-219);
// with Groups (groups.go: each
// group lives in one shard, a partition of __consumer_offsets; multi-group
// requests are split by shard and the answers merged in request order)
// JoinGroup 2-9, SyncGroup 0-5, Heartbeat 0-4, LeaveGroup 0-5,
// OffsetCommit 2-10, OffsetFetch 1-10 (v10, topics by ID, with TopicNames
// and TopicIDs; 9 without), DescribeGroups 0-6, ListGroups 0-5,
// DeleteGroups 0-2, OffsetDelete 0, TxnOffsetCommit 0-5,
// ConsumerGroupHeartbeat 0-1 and ConsumerGroupDescribe 0-1 (Kafka 4.1's
// ranges, KIP-896, KIP-848);
// with Transactions (txns.go: each transactional id lives in one shard, a
// partition of __transaction_state, routed as groups are) InitProducerId
// with a transactional id, AddPartitionsToTxn 0-5 (v4+: the brokers'
// KIP-890 form, CLUSTER_ACTION), AddOffsetsToTxn 0-4, EndTxn 0-5,
// DescribeTransactions 0 and ListTransactions 0-1; ApiVersions v3 then
// lists the transaction.version feature (supported 0-2, finalized at the
// TxnVersion's level): at 2 clients use KIP-890 part 2 (Produce v12 and
// TxnOffsetCommit v5 add their partition through the TxnVerifier, EndTxn
// v5 bumps the epoch), below it part 1; both are served either way.
//
// # Connection model
//
// Each connection has three goroutines. The reader reads a frame, decodes
// its header (v1, or v2 with tagged fields for flexible versions) and body,
// and queues the decoded request; the queue holds Options.MaxQueuedRequests
// requests and Options.MaxQueuedBytes of frames (counting the request being
// handled; a bigger frame waits until everything before it is answered),
// after which the reader stops reading and TCP pushes back on the client.
// The serve goroutine takes requests from the queue in order, runs each
// handler to completion before taking the next, and hands the encoded
// response to the writer through the ordered response queue. The writer
// writes responses in that order through a buffer that it flushes whenever
// the response queue is empty: responses ready together leave in one
// syscall (2.7 times the pipelined ApiVersions throughput of one write per
// response), and none waits behind a handler that blocks. A Fetch response
// whose records Logs left in their files (FileRecords) is encoded around
// them; the writer flushes its buffer and sends each file range with
// sendfile(2) (copying it when the connection is not a socket or the file
// has no descriptor), then releases the files.
//
// Fetch sessions (KIP-227, fetch_session.go): the server keeps Kafka's
// FetchSessionCache, Options.FetchSessionCacheSlots sessions
// (max.incremental.fetch.session.cache.slots, 1000) shared by all
// connections. A full Fetch at session epoch 0 opens one; the client's
// next fetches name it with the next epoch and carry only the partitions
// whose position moved and the ones to forget, and the answer carries only
// the partitions with news (records, an error, a diverging epoch, a new
// high watermark, last stable offset or log start offset). Every
// partition of the session is still read on each fetch, so a follower's
// position counts towards the ISR as with full fetches, and the records
// of an answer still go out with sendfile(2). A partition that returned
// records moves to the session's end, so each gets its turn under
// max_bytes. When the cache is full, a session unused for 120 s is
// evicted first, else the least valuable (consumers' before followers',
// then the fewest partitions) if the new one is worth more; otherwise the
// client fetches without a session. A wrong epoch answers
// INVALID_FETCH_SESSION_EPOCH, an unknown id FETCH_SESSION_ID_NOT_FOUND,
// and the client starts over with a full fetch. FetchSessionStats counts
// sessions, cached partitions, evictions and what incremental answers
// carried. franz-go uses sessions; librdkafka, sarama and kafka-go send
// epoch -1 and fetch in full.
//
// So requests pipelined on one connection are decoded ahead but handled one
// at a time, and responses go out strictly in request order. Handling in
// sequence is deliberate, not only simple: Kafka processes one request per
// connection at a time, and idempotent producers with several batches in
// flight rely on their produce requests being applied in the order sent.
// A handler that must wait (acks=all, a long-polling fetch) blocks only its
// own connection.
//
// A response is one frame: the int32 size, the response header (v0: the
// correlation id; v1 adds an empty tagged-field section for flexible
// versions, except for ApiVersions, whose response header is always v0) and
// the body. A handler may return no response (Produce with acks=0 expects
// none).
//
// Shutdown stops the listeners, makes every reader stop at its next read,
// lets the serve goroutines answer what was already read and the writers
// write it, and waits for the connections to close; when its context ends
// first, it closes them at once. Close does that at once. Handlers get a context cancelled when their
// connection is closed by the server.
//
// # Request timing
//
// With an Options.Observer the connection stamps each request when its
// frame was read, when the serve goroutine took it, when its handler
// returned and when the writer took its response, and reports it once the
// write buffer holding the response was flushed (observer.go): Kafka's
// RequestQueue, Local, Remote, ResponseQueue and ResponseSend times, which
// add up to the total. Remote time is what a handler, or the Broker it
// calls, spends waiting between BeginRemote(ctx) and End (the long poll of
// a Fetch), plus, for a deferred response (a Produce waiting for acks=all),
// the time from its handler's return until the finisher has it complete.
// The cost is five time.Now calls per request (six for a deferred one), no
// allocation; without an Observer, none. The Observer's
// TopicObserver capability hears the records and bytes of each produced
// partition and fetched topic (Kafka's BrokerTopicMetrics).
//
// # Limits and bad input
//
//   - Connections (limits.go, idle.go): Options.MaxConnections
//     (max.connections) and MaxConnectionsPerIP with its overrides
//     (max.connections.per.ip[.overrides]) close a connection accepted
//     over them at once, counted in ConnStats; ConnectionsMaxIdle
//     (connections.max.idle.ms) closes one that sent nothing for that long
//     while no request of it waited for an answer. Buffers are not kept
//     per connection while idle: the 16 KiB read buffer goes back to a
//     server-wide pool after a second without a byte (the reader then
//     waits for readability with MSG_PEEK on Linux, holding none), the
//     64 KiB write buffer is taken from a pool only while responses are
//     being written, and recycled response buffers are dropped when idle.
//     Replica fetchers connect to the listener named by the node's
//     inter.broker.listener.name and count against the same limits (one
//     Server serves every Kafka listener of a node: ServeListener).
//   - SSL listeners (tls.go): ServeListenerTLS makes each accepted
//     connection a crypto/tls server; its handshake runs on the
//     connection's goroutine within Options.HandshakeTimeout (10 s). A
//     failed or timed-out handshake (a plaintext client, a missing or
//     untrusted client certificate) closes the connection with a log line
//     and counts in ConnStats.HandshakeFailed; a peer that closes before
//     its ClientHello (the controller's liveness probe) is neither. Over
//     TLS a Fetch's file ranges are copied, not sent with sendfile(2) (a
//     *tls.Conn is not a syscall.Conn); the idle reader keeps its buffer.
//   - SASL listeners (sasl.go): ServeListenerSecure with a SASL config
//     (mechanisms, PLAIN's users, a SCRAM credential lookup) makes each
//     connection authenticate before anything else is served, as Kafka's
//     SaslServerAuthenticator: ApiVersions and SaslHandshake (v1; v0,
//     dropped by Kafka 4, closes the connection) before the handshake,
//     SaslAuthenticate tokens after it, each stepping the mechanism
//     (node/sasl). Any other request before authentication closes the
//     connection unanswered; a second handshake or an ApiVersions during
//     the exchange is answered ILLEGAL_SASL_STATE, an unknown mechanism
//     UNSUPPORTED_SASL_MECHANISM with the enabled list, bad credentials
//     SASL_AUTHENTICATION_FAILED with a message that does not tell an
//     unknown user from a wrong password; each after
//     Options.FailedAuthenticationDelay, then the connection closes.
//     Frames are bounded by 512 KiB until authenticated
//     (sasl.server.max.receive.size). Counted by listener in ConnStats
//     (SASLFailedBy, SASLAuthenticatedBy, re-authentications included).
//     OAUTHBEARER (KIP-255/KIP-768) validates the client's JWT with
//     SASL.OAuth (node/sasl: a JWKS, or Kafka's default unsecured
//     tokens); the principal is User:<sub>, and the session ends when
//     the token expires. With SASL.ReauthAfter
//     (connections.max.reauth.ms, KIP-368) a session ends after that
//     long at the latest (SessionLifetimeMs tells the client):
//     a SaslHandshake with the same mechanism starts a
//     re-authentication, which may not change the principal, and any
//     other request after the end closes the connection. The client
//     side, ClientConn.Authenticate, runs franz-go's PLAIN and SCRAM
//     mechanisms (the replica fetchers on a SASL inter-broker listener)
//     and re-authenticates at nine tenths of the lifetime.
//   - Authorization (authz.go): with Options.Authorizer every
//     authenticated request carries its connection's principal
//     ("User:<SASL user>", else "User:<mapped certificate name>" through
//     Security.MapPrincipal, else User:ANONYMOUS) and peer IP. The
//     dispatch hook (Server.authorizeAPI) checks the APIs that need one
//     permission for the whole request before their handler runs:
//     DescribeCluster, DescribeQuorum, the SCRAM and ACL APIs, ElectLeaders,
//     WriteTxnMarkers (CLUSTER_ACTION), the reassignment APIs
//     (CLUSTER_AUTHORIZATION_FAILED), and the group APIs that name one
//     group: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit
//     (READ), OffsetDelete (DELETE) (GROUP_AUTHORIZATION_FAILED). The
//     handlers check their own resources (Produce, Fetch, Metadata,
//     ListOffsets, OffsetForLeaderEpoch, topic admin, configs,
//     InitProducerId, DescribeProducers: see each file; Produce also
//     WRITE on the transactional id of transactional batches) with Server.allowed, which counts
//     the decision (AuthzStats) and logs a denial. Handlers of APIs that
//     name many groups or topics (OffsetCommit's and OffsetFetch's
//     topics, DescribeGroups, DeleteGroups, ListGroups, FindCoordinator)
//     check each with s.allowed(r, op, kmsg.ACLResourceTypeGroup or
//     Topic, name) (s.visible for filtering without a log line).
//     Transactional ids are resources as in Kafka's AclAuthorizer:
//     WRITE for InitProducerId, AddPartitionsToTxn v0-3, AddOffsetsToTxn,
//     TxnOffsetCommit and EndTxn; DESCRIBE for FindCoordinator,
//     DescribeTransactions and ListTransactions' filter
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent
//     InitProducerId needs IDEMPOTENT_WRITE on the cluster or WRITE on
//     any topic (KIP-679).
//   - A frame whose size prefix is negative or above Options.MaxRequestBytes
//     (socket.request.max.bytes, 100 MiB by default) closes the connection
//     with a log line. The frame buffer grows as bytes arrive (from 64 KiB,
//     quadrupling), so a lying prefix never allocates the size it claims.
//     Produce frames of up to 1 MiB go into buffers recycled through a
//     server-wide pool once their handler returned (framePool in
//     frame.go): Logs.Produce must not keep the records it is given.
//   - An unknown API key, an unsupported version of any API but ApiVersions,
//     a header or body that does not decode (truncated, garbled, a collection
//     longer than the bytes left): the connection is closed with a log line,
//     after the requests read before it are answered. This is what Kafka does
//     for a request it cannot parse.
//   - An unsupported ApiVersions version is answered (KIP-511): see
//     api_versions.go.
//   - kmsg rejects a collection length larger than the remaining bytes times
//     the smallest encoding of one element, so a decoded request stays within
//     a constant factor of its frame; but that factor reaches about 24 (an
//     empty string is 2 bytes on the wire and a 40-byte struct decoded), so a
//     100 MiB frame could cost 2.4 GB. APIs whose real requests are small
//     carry their own lower limit in the table (api.maxBytes): ApiVersions
//     64 KiB, Metadata 8 MiB. Over it, the connection closes before decoding.
//
// kmsg is lenient both ways: ReadFrom ignores bytes left after a body, and
// AppendTo writes a nil *string in a non-nullable field as null (length -1),
// which kmsg reads back but Java clients refuse. The server accepts trailing
// bytes as kmsg does; handlers must set every non-nullable string.
//
// With the invariants build tag, every response is decoded back before it is
// sent (invariants.go); that catches a wrong header or version, not the
// null-in-non-nullable case above.
//
// # The client side
//
// ClientConn (client.go) is the other end of the same framing, for the
// broker's own requests to other brokers (node/replica's fetchers) and
// for tests that must send a request exactly as written: one request in
// flight (correlation id 1), the response header skipped by version, the
// body decoded at the request's version into a buffer it reuses, frames
// bounded by MaxResponseBytes.
//
// # Adding an API
//
//  1. Add a file named after the API (list_offsets.go) that opens with a
//     comment giving the versions it supports and how it behaves, and holds
//     its handler: func(ctx, *Server, *request) (kmsg.Response, error).
//     The handler type-asserts r.body to its kmsg request type, builds the
//     response with req.ResponseKind() (so the version matches) and the
//     kmsg New* constructors (so defaults such as INT32_MIN authorized
//     operations are right), sets every string that is non-nullable at that
//     version, puts errors for the client in it as kerr codes, and returns
//     an error only to close the connection.
//  2. Add one row to the table in newTable (apis.go): key, min and max version
//     (at most what kmsg knows), handler. ApiVersions advertises the row.
//  3. If the API needs something new from the node, add it to Broker, or, for
//     an optional capability, as a separate small interface named in the
//     row (needs: has[PartitionAdmin]), so that the row is present only
//     when the node can serve it.
//  4. Add wire tests, a real-client test where kgo or kadm has a call for it,
//     and a seed for FuzzRequestFrame.
package kafka
