package healthcheck

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestHealthcheck: 200 is healthy, 503 is not and shows the node's
// reason, and a closed port is not.
func TestHealthcheck(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if ready.Load() {
			w.Write([]byte("ok\n"))
			return
		}
		http.Error(w, "not ready: broker fenced", http.StatusServiceUnavailable)
	}))
	c := &Command{URL: srv.URL + "/readyz", Timeout: 5 * time.Second}
	if err := c.Run(context.Background()); err != nil {
		t.Fatalf("ready node: %v", err)
	}
	ready.Store(false)
	if err := c.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "broker fenced") {
		t.Fatalf("unready node: err = %v, want 503 with the reason", err)
	}
	srv.Close()
	if err := c.Run(context.Background()); err == nil {
		t.Fatal("closed port: no error")
	}
	cmd := NewCommand()
	cmd.SetArgs([]string{"--url", "http://127.0.0.1:1/readyz", "--timeout", "1s"})
	cmd.SetErr(&strings.Builder{})
	if err := cmd.Execute(); err == nil {
		t.Fatal("the command exited 0 for a port nothing listens on")
	}
}
