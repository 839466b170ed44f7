package quorum

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// The controller port's hello. Every connection to the controller port,
// raft's (muxListener.Dial) and forwarding (forward), opens with a hello
// that names the sender's cluster; the protocol's first byte follows:
//
//	0xC5 | version 1 | n (1 byte, <= 64) | cluster id (n bytes) | node id (int32, big-endian)
//
// The acceptor (muxListener.route) reads it within firstByteTimeout and at
// most maxHello bytes, and closes a connection whose hello is malformed or
// names another cluster, before raft or the forwarding server sees one byte
// of it: a node of another cluster (a wrong controller.quorum.voters, a
// recycled port) cannot vote, append or propose here. The dialer does not
// wait for an answer, so the hello costs no round trip; raft keeps its pooled
// connections, each with one hello. To a peer of another cluster the acceptor
// answers with its own hello before closing: where a response frame was
// expected, 0xC5 cannot start one (its length would exceed maxFrame), so the
// forwarding client (Join, Propose on a follower) returns ErrWrongCluster
// naming both clusters instead of a bare EOF.
const (
	helloMagic   byte = 0xC5 // not forwardMagic, not a raft RPC type (0..4)
	helloVersion byte = 1
	// maxClusterIDLen bounds the cluster id (a base64url UUID has 22 bytes).
	maxClusterIDLen = 64
	helloFixedLen   = 3 + 4
	maxHello        = helloFixedLen + maxClusterIDLen
)

// hello is the decoded hello of a connection.
type hello struct {
	ClusterID string
	NodeID    int32
}

// appendHello appends h's encoding to b; h.ClusterID must be at most
// maxClusterIDLen bytes (Open checks).
func appendHello(b []byte, h hello) []byte {
	b = append(b, helloMagic, helloVersion, byte(len(h.ClusterID)))
	b = append(b, h.ClusterID...)
	return binary.BigEndian.AppendUint32(b, uint32(h.NodeID))
}

// readHello reads one hello from r, never more than maxHello bytes. A
// malformed hello gives an error wrapping ErrBadHello; a connection that
// ends or times out gives the I/O error.
func readHello(r io.Reader) (hello, error) {
	var hdr [3]byte
	if _, err := io.ReadFull(r, hdr[:1]); err != nil {
		return hello{}, err
	}
	switch hdr[0] {
	case helloMagic:
	case forwardMagic, 0, 1, 2, 3, 4:
		return hello{}, fmt.Errorf("%w: first byte 0x%02x is a protocol byte without a hello (a Sluice node older than the hello?)", ErrBadHello, hdr[0])
	default:
		return hello{}, fmt.Errorf("%w: first byte 0x%02x (not a Sluice controller?)", ErrBadHello, hdr[0])
	}
	if _, err := io.ReadFull(r, hdr[1:]); err != nil {
		return hello{}, err
	}
	if hdr[1] != helloVersion {
		return hello{}, fmt.Errorf("%w: version %d, this node speaks %d", ErrBadHello, hdr[1], helloVersion)
	}
	n := int(hdr[2])
	if n > maxClusterIDLen {
		return hello{}, fmt.Errorf("%w: cluster id of %d bytes (at most %d)", ErrBadHello, n, maxClusterIDLen)
	}
	var rest [maxClusterIDLen + 4]byte
	if _, err := io.ReadFull(r, rest[:n+4]); err != nil {
		return hello{}, err
	}
	return hello{ClusterID: string(rest[:n]), NodeID: int32(binary.BigEndian.Uint32(rest[n : n+4]))}, nil
}

// checkHello reads the hello of an accepted connection and checks that it
// names clusterID (any cluster when clusterID is empty).
func checkHello(br *bufio.Reader, clusterID string) (hello, error) {
	h, err := readHello(br)
	if err != nil {
		return h, err
	}
	if clusterID != "" && h.ClusterID != clusterID {
		return h, fmt.Errorf("%w: node %d says cluster %q, this node is in cluster %q", ErrWrongCluster, h.NodeID, h.ClusterID, clusterID)
	}
	return h, nil
}

// refusals logs refused connections, one line per remote host and reason
// per interval, with the count of the lines it held back. Safe for
// concurrent use.
type refusals struct {
	log   *slog.Logger
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	seen map[string]*refusal // by remote host + reason
}

type refusal struct {
	logged     time.Time
	suppressed int
}

// maxRefusalKeys bounds the memory of refusals; past it, old keys go.
const maxRefusalKeys = 1024

func newRefusals(log *slog.Logger) *refusals {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &refusals{log: log, every: time.Minute, now: time.Now, seen: map[string]*refusal{}}
}

// allow reports whether a refusal under key may be logged now, and how many
// under key were held back since the last line.
func (r *refusals) allow(key string) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if e, ok := r.seen[key]; ok {
		if now.Sub(e.logged) < r.every {
			e.suppressed++
			return false, 0
		}
		n := e.suppressed
		e.logged, e.suppressed = now, 0
		return true, n
	}
	if len(r.seen) >= maxRefusalKeys {
		for k, e := range r.seen {
			if now.Sub(e.logged) >= r.every {
				delete(r.seen, k)
			}
		}
		if len(r.seen) >= maxRefusalKeys {
			clear(r.seen)
		}
	}
	r.seen[key] = &refusal{logged: now}
	return true, 0
}

// refusedTLS logs (rate-limited) a failed TLS handshake on the secured
// controller port: a peer without a certificate this node trusts.
func (r *refusals) refusedTLS(remote net.Addr, err error) {
	host := remote.String()
	if ta, ok := remote.(*net.TCPAddr); ok {
		host = ta.IP.String()
	}
	ok, held := r.allow(host + "\x00tls")
	if !ok {
		return
	}
	r.log.Error(fmt.Sprintf("quorum: refused a controller-port connection from %s: TLS handshake: %v: the CONTROLLER listener takes only peers with a certificate signed by a CA in its truststore (listener.name.controller.ssl.truststore.location); check the peer's keystore, or that it speaks TLS at all", remote, err),
		"remote", remote.String(), "refused_since_last_line", held)
}

// refusedPeer logs (rate-limited) a peer whose trusted certificate
// Config.AuthorizePeer refused.
func (r *refusals) refusedPeer(remote net.Addr, err error) {
	host := remote.String()
	if ta, ok := remote.(*net.TCPAddr); ok {
		host = ta.IP.String()
	}
	ok, held := r.allow(host + "\x00peer")
	if !ok {
		return
	}
	r.log.Error(fmt.Sprintf("quorum: refused a controller-port connection from %s: %v", remote, err),
		"remote", remote.String(), "refused_since_last_line", held)
}

// refused logs (rate-limited) why the connection from remote was closed.
func (r *refusals) refused(remote net.Addr, clusterID string, h hello, err error) {
	host := remote.String()
	if ta, ok := remote.(*net.TCPAddr); ok {
		host = ta.IP.String() // a retrying peer dials from a new port each time
	}
	wrong := errors.Is(err, ErrWrongCluster)
	key := host + "\x00bad hello"
	if wrong {
		key = host + "\x00cluster " + h.ClusterID
	}
	ok, held := r.allow(key)
	if !ok {
		return
	}
	if wrong {
		peerCluster := h.ClusterID
		if peerCluster == "" {
			peerCluster = "(none)"
		}
		r.log.Error(fmt.Sprintf("quorum: refused a controller-port connection from another cluster: this node is in cluster %s; the peer at %s (node %d) says cluster %s: check controller.quorum.voters and the peer's log.dirs meta.properties",
			clusterID, remote, h.NodeID, peerCluster),
			"remote", remote.String(), "cluster_id", clusterID, "peer_cluster_id", h.ClusterID, "peer_node_id", h.NodeID, "refused_since_last_line", held)
		return
	}
	r.log.Error(fmt.Sprintf("quorum: refused a controller-port connection from %s: %v: check that the peer is a Sluice node of this version and that controller.quorum.voters points at controller ports", remote, err),
		"remote", remote.String(), "cluster_id", clusterID, "refused_since_last_line", held)
}
