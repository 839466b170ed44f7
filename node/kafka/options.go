package kafka

import (
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"time"
)

// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes default (100 MiB).
const DefaultMaxRequestBytes = 104857600

// DefaultMaxQueuedRequests is how many decoded requests a connection may hold
// waiting for the handler before its reader stops reading.
const DefaultMaxQueuedRequests = 16

// DefaultMaxQueuedBytes is how many request bytes a connection may hold
// decoded ahead of (and including) the request being handled.
const DefaultMaxQueuedBytes = 4 << 20

// DefaultHandshakeTimeout bounds a TLS handshake on an SSL listener.
const DefaultHandshakeTimeout = 10 * time.Second

// Options configure a Server. The node reads them from its configuration
// (node/config) and passes them down; zero fields take the defaults.
type Options struct {
	// MaxRequestBytes bounds one request frame (socket.request.max.bytes).
	// A larger or negative size prefix closes the connection.
	MaxRequestBytes int32
	// MaxQueuedRequests bounds the decoded requests buffered per
	// connection ahead of the handler (pipelining depth before
	// back-pressure through TCP).
	MaxQueuedRequests int
	// MaxQueuedBytes bounds the frame bytes a connection holds: the
	// request being handled plus those decoded ahead. A frame that would
	// go over it is read only once the connection has answered everything
	// before it, so one connection holds at most about
	// max(MaxRequestBytes, MaxQueuedBytes) of frames (Kafka, which reads
	// nothing while a request is in flight, holds one).
	MaxQueuedBytes int32
	// MaxConnections bounds the open connections (max.connections): one
	// accepted beyond it is closed at once. Zero: no bound.
	MaxConnections int
	// MaxConnectionsPerIP bounds the open connections from one address
	// (max.connections.per.ip), except those in MaxConnectionsPerIPOverrides
	// (max.connections.per.ip.overrides), which have their own bound. One
	// accepted beyond it is closed at once. Zero: no bound (an override
	// of zero refuses the address).
	MaxConnectionsPerIP          int
	MaxConnectionsPerIPOverrides map[netip.Addr]int
	// ConnectionsMaxIdle closes a connection that has sent nothing and
	// waits for no answer for this long (connections.max.idle.ms). Zero:
	// never.
	ConnectionsMaxIdle time.Duration
	// HandshakeTimeout bounds the TLS handshake of a connection to an
	// SSL listener (ServeListenerTLS); one that takes longer is closed.
	// Zero: DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// FailedAuthenticationDelay delays the answer to a failed SASL
	// authentication and the close that follows
	// (connection.failed.authentication.delay.ms). Zero: none.
	FailedAuthenticationDelay time.Duration
	// Authorizer, when set, authorizes every request as Kafka's
	// authorizer does (authz.go); nil allows everything.
	Authorizer Authorizer
	// Observer, when set, receives the timing of every request, and its
	// TopicObserver capability, if any, the per-topic traffic (metrics).
	// Nil takes no timestamps.
	Observer Observer
	// Logger receives one line per closed-on-error connection and per
	// Broker failure. Nil discards.
	Logger *slog.Logger
	// FetchSessionCacheSlots bounds the fetch sessions (KIP-227) the
	// server keeps (max.incremental.fetch.session.cache.slots). Zero:
	// DefaultFetchSessionCacheSlots; negative: no sessions (Kafka's 0).
	FetchSessionCacheSlots int
	// ReplicaListener, when set, is the only listener a replica fetch
	// (replica id >= 0) is taken on: the node's inter.broker.listener.name
	// when it has other Kafka listeners for clients. A replica fetch that
	// comes in on any other listener is refused for every partition
	// (TOPIC_AUTHORIZATION_FAILED), nothing read and nothing counted as
	// the replica's, so a client of a client listener cannot pose as a
	// follower. Empty: every listener takes them (one listener serves
	// brokers and clients alike).
	ReplicaListener string
	// ReplicaPrincipal, when set, is the principal a replica fetch
	// claiming replica id id must come from (sluice.node.principal.pattern):
	// a fetch from any other principal is refused for every partition
	// (TOPIC_AUTHORIZATION_FAILED) and logged, nothing read and nothing
	// counted as the replica's, so one broker's credentials cannot
	// acknowledge writes as another broker. "" (or nil): not checked.
	ReplicaPrincipal func(id int32) string
	// QuotaWindowNum and QuotaWindowSize are how client quotas are
	// measured (quota.window.num, quota.window.size.seconds; quotas.go).
	// Zero: Kafka's 11 samples of 1 s.
	QuotaWindowNum  int
	QuotaWindowSize time.Duration
}

// EnsureDefaults fills zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.FetchSessionCacheSlots == 0 {
		o.FetchSessionCacheSlots = DefaultFetchSessionCacheSlots
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.QuotaWindowNum <= 0 {
		o.QuotaWindowNum = 11
	}
	if o.QuotaWindowSize <= 0 {
		o.QuotaWindowSize = time.Second
	}
	if o.MaxQueuedRequests == 0 {
		o.MaxQueuedRequests = DefaultMaxQueuedRequests
	}
	if o.MaxQueuedBytes == 0 {
		o.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// Validate reports the first invalid field, wrapping ErrInvalidOptions.
func (o *Options) Validate() error {
	// The smallest request is a v1 header with a null client id: key,
	// version, correlation id and client id length.
	if o.MaxRequestBytes < 10 {
		return fmt.Errorf("%w: socket.request.max.bytes %d is below the smallest request (10 bytes)", ErrInvalidOptions, o.MaxRequestBytes)
	}
	if o.MaxQueuedRequests < 1 {
		return fmt.Errorf("%w: MaxQueuedRequests %d must be at least 1", ErrInvalidOptions, o.MaxQueuedRequests)
	}
	if o.MaxConnections < 0 || o.MaxConnectionsPerIP < 0 || o.ConnectionsMaxIdle < 0 {
		return fmt.Errorf("%w: connection limits must not be negative", ErrInvalidOptions)
	}
	for a, n := range o.MaxConnectionsPerIPOverrides {
		if n < 0 {
			return fmt.Errorf("%w: max.connections.per.ip.overrides: %d for %s", ErrInvalidOptions, n, a)
		}
	}
	if o.MaxQueuedBytes < 1 {
		return fmt.Errorf("%w: MaxQueuedBytes %d must be at least 1", ErrInvalidOptions, o.MaxQueuedBytes)
	}
	return nil
}
