package node

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"time"

	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/node/replica"
	"github.com/sluice-log/sluice/quorum"
)

// health is the body of GET /health.
type health struct {
	NodeID      int32  `json:"node_id"`
	BrokerEpoch int64  `json:"broker_epoch"`
	Controller  int32  `json:"controller"`
	ClusterID   string `json:"cluster_id"`
	Partitions  int    `json:"partitions"`
	Status      string `json:"status"`
}

// serveHTTP serves on ln until the node closes:
//   - /health: JSON; 200 while the node serves, 503 once it is shutting down;
//   - /metrics: the Prometheus text format (node/metrics);
//   - /healthz: 200 while the process answers (liveness);
//   - /readyz: 200 when the broker is registered, unfenced with this run's
//     epoch, its log dir online, and serving Kafka requests; 503 with the
//     reason otherwise (readiness);
//   - /debug/pprof/: Go's profiles, only with sluice.debug.pprof=true.
func (n *Node) serveHTTP(ln net.Listener) {
	mux := http.NewServeMux()
	if n.cfg.DebugPprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	mux.Handle("GET /metrics", n.metrics.m.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if why := n.notReady(); why != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, why+"\n")
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		h := health{NodeID: n.cfg.NodeID, BrokerEpoch: n.epoch.Load(), ClusterID: n.clusterID, Status: "ok"}
		h.Controller, _ = n.ctrl.Leader()
		h.Partitions = n.rm.Len()
		n.mu.RLock()
		closing := n.mu.closed
		n.mu.RUnlock()
		w.Header().Set("Content-Type", "application/json")
		if closing {
			h.Status = "shutting down"
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(h)
	})
	n.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if lt := n.cfg.TLS[config.ListenerHTTP]; lt != nil {
			// HTTPS (HTTP mapped to SSL), with client certificates when
			// its ssl.client.auth asks; the handshake is bounded by
			// ReadHeaderTimeout.
			ln = tls.NewListener(ln, lt.Server)
		}
		if err := n.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("node: http listener failed", "err", err)
		}
	}()
}

// notReady says why the node should not get traffic, "" when it should.
func (n *Node) notReady() string {
	n.mu.RLock()
	closing := n.mu.closed
	n.mu.RUnlock()
	if closing {
		return "shutting down"
	}
	if n.epoch.Load() == 0 {
		return "not registered with the controller yet"
	}
	if err := n.logDirOffline(); err != nil {
		return fmt.Sprintf("log dir %s is offline (%v): its replicas serve nothing; free space or fix the disk, then restart the node", n.dir, err)
	}
	var why string
	n.ctrl.View(func(im *quorum.Image) {
		b := im.Brokers[n.cfg.NodeID]
		switch {
		case b == nil:
			why = fmt.Sprintf("broker %d is not registered in the metadata", n.cfg.NodeID)
		case b.Epoch != n.epoch.Load():
			why = fmt.Sprintf("broker %d is registered with epoch %d, this process has epoch %d", n.cfg.NodeID, b.Epoch, n.epoch.Load())
		case b.Fenced:
			why = fmt.Sprintf("broker %d is fenced: the active controller has not seen it alive (gossip)", n.cfg.NodeID)
		case b.ShuttingDown:
			why = fmt.Sprintf("broker %d is shutting down", n.cfg.NodeID)
		}
	})
	if why == "" {
		if ns := n.notServing(); len(ns) > 0 {
			why = fmt.Sprintf("%d partitions led here cannot serve: %s", len(ns), strings.Join(ns[:min(len(ns), 10)], ", "))
		}
	}
	return why
}

// notServing lists the partitions the metadata says this node leads but
// that it cannot serve — its log did not open at the last reconciliation,
// or a leader the controller fenced — as "topic-partition (why)", sorted.
// Clients are sent here and get NOT_LEADER_OR_FOLLOWER from it.
func (n *Node) notServing() []string {
	var led []replica.TP
	n.ctrl.View(func(im *quorum.Image) {
		for name, t := range im.Topics {
			for i, p := range t.Partitions {
				if p.Leader == n.cfg.NodeID {
					led = append(led, replica.TP{Topic: name, Partition: int32(i)})
				}
			}
		}
	})
	var out []string
	for _, key := range led {
		r := n.rm.Replica(key)
		n.mu.RLock()
		openErr := n.mu.openErrs[key]
		n.mu.RUnlock()
		switch {
		case r == nil && openErr != nil:
			out = append(out, fmt.Sprintf("%s (its log did not open: %v)", key.String(), openErr))
		case r.NotServing():
			out = append(out, key.String()+" (fenced: a newer leader epoch exists, the metadata has not caught up)")
		}
	}
	slices.Sort(out)
	return out
}
