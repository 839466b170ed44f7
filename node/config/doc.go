// Package config reads a node's configuration, and is the only package that
// uses viper. Keys are Kafka's (server.properties) with Kafka's defaults.
// Sources, strongest first: command-line flags named after the keys
// (--log.dirs=/data), SLUICE_* environment variables (SLUICE_LOG_DIRS), the
// properties file given with --config, and the defaults. Load validates
// everything into a typed Config; an unknown key (in the file, or a SLUICE_*
// variable) or an invalid value is an error that names the key.
//
// Listeners are Kafka's NAME://host:port lists. Three names are Sluice's
// own: CONTROLLER is the Raft controller listener (which also carries
// command forwarding), always required (every node replays the metadata
// log over it); HTTP, optional, serves /health, /healthz, /readyz and
// /metrics (and /debug/pprof/ with sluice.debug.pprof=true); GOSSIP,
// optional, runs liveness gossip (memberlist) and joins gossip.seeds.
// Every other name is a Kafka protocol listener, as in Kafka: its
// security protocol comes from listener.security.protocol.map (PLAINTEXT,
// SSL, SASL_PLAINTEXT or SASL_SSL), and a broker needs at least one. Two
// PLAINTEXT listeners with different names (INTERNAL for peers and
// clients inside a network, EXTERNAL for clients outside it) serve the
// same broker; a client is told the advertised addresses of the listener
// it connected to, and replica fetchers dial inter.broker.listener.name
// (default PLAINTEXT).
//
// An SSL listener serves TLS (crypto/tls) with the ssl.* keys, in Kafka's
// names, PEM only (KIP-651; JKS and PKCS12 are refused with a message):
// ssl.keystore.location (a PEM file with the private key and the
// certificate chain) or ssl.keystore.certificate.chain with
// ssl.keystore.key (inline PEM; in a properties file over continuation
// lines ending in a backslash, as Kafka's docs write them);
// ssl.truststore.location or ssl.truststore.certificates (the CAs that
// sign client certificates and peer brokers' certificates);
// ssl.client.auth (none, requested, required); ssl.enabled.protocols
// (TLSv1.2, TLSv1.3); ssl.cipher.suites (TLS 1.2 suites, IANA names);
// ssl.endpoint.identification.algorithm (https or empty, for the broker
// dialling the inter-broker listener). listener.name.<name>.<ssl key>
// (e.g. listener.name.external.ssl.keystore.location, or
// SLUICE_LISTENER_NAME_EXTERNAL_SSL_KEYSTORE_LOCATION) overrides a key for
// one listener. Everything is checked at Load, into Config.TLS. Unlike
// Kafka, ssl.keystore.type and ssl.truststore.type default to PEM.
// Secrets (ssl.keystore.key, the passwords) are kept out of Values, so
// DescribeConfigs never reveals them (Sensitive). A SASL_SSL listener
// takes the same ssl.* keys.
//
// A SASL_PLAINTEXT or SASL_SSL listener (sasl.go) authenticates every
// connection with one of sasl.enabled.mechanisms (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512; listener.name.<name>.sasl.enabled.mechanisms for one
// listener; Kafka's default GSSAPI is not served, so Sluice's default
// is the three). PLAIN's users come from the listener's JAAS
// configuration, as in Kafka:
//
//	listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
//	    username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";
//
// SCRAM's credentials live in the metadata quorum (sluice init
// --add-scram, AlterUserScramCredentials). When the inter-broker
// listener uses SASL, brokers authenticate to each other with
// sasl.mechanism.inter.broker.protocol (default: the first enabled) and
// the username and password options of that mechanism's JAAS
// configuration (listener.name.<name>.scram-sha-256.sasl.jaas.config=
// org.apache.kafka.common.security.scram.ScramLoginModule required
// username="broker" password="...";). JAAS values are never described.
// connection.failed.authentication.delay.ms (100) delays the answer to a
// failed authentication; connections.max.reauth.ms (0: off) is the
// session lifetime after which a connection must re-authenticate
// (KIP-368). Environment forms:
// SLUICE_LISTENER_NAME_<NAME>_SASL_ENABLED_MECHANISMS and
// SLUICE_LISTENER_NAME_<NAME>_<PLAIN|SCRAM_SHA_256|SCRAM_SHA_512>_SASL_JAAS_CONFIG.
//
// The node's own ports (security.go): CONTROLLER and HTTP may be mapped
// to SSL in listener.security.protocol.map and take the same ssl.* keys
// (listener.name.controller.ssl.*, listener.name.http.ssl.*) into
// Config.TLS. CONTROLLER always requires client certificates (mutual TLS
// between the nodes; an override to anything else is refused);
// controller.listener.names, which Kafka's KRaft configs carry, must
// name CONTROLLER. GOSSIP stays PLAINTEXT and is encrypted with
// sluice.gossip.encryption.keys (base64 AES keys, the first primary;
// never described). A listener's keystore and truststore files are
// reread every sluice.ssl.reload.interval.ms (60000; 0: off) and by
// Config.ReloadTLS (SIGHUP): ListenerTLS swaps what new handshakes use
// (tls_reload.go), open connections keep theirs, and a file that does
// not load changes nothing.
//
// Authorization (authz.go): authorizer.class.name set to
// org.apache.kafka.metadata.authorizer.StandardAuthorizer turns it on
// (Config.Authorizer; empty: off, any other class refused), super.users
// ("User:admin;User:broker"), allow.everyone.if.no.acl.found (false).
// ssl.principal.mapping.rules (DEFAULT) maps TLS client certificates'
// names to principals (node/sasl.ParsePrincipalRules).
//
// Environment variables: each key's name upper-cased with dots and
// dashes as underscores, after SLUICE_ (advertised.listeners is
// SLUICE_ADVERTISED_LISTENERS). SLUICE_CLI_* are the admin tools' and
// are ignored here.
package config
