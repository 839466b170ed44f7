package node

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"
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

// serveHTTP serves /health on ln until the node closes: 200 while the node
// serves, 503 once it is shutting down.
func (n *Node) serveHTTP(ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		h := health{NodeID: n.cfg.NodeID, BrokerEpoch: n.epoch, ClusterID: n.clusterID, Status: "ok"}
		h.Controller, _ = n.ctrl.Leader()
		n.mu.RLock()
		h.Partitions = len(n.replicas)
		closing := n.closed
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
		if err := n.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("node: http listener failed", "err", err)
		}
	}()
}
