package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// alive reports whether pid is a running process (not a zombie we reaped).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// A zombie still answers kill 0; its /proc state says Z.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	for i := len(b) - 1; i > 0; i-- {
		if b[i] == ')' && i+2 < len(b) {
			return b[i+2] != 'Z'
		}
	}
	return true
}

// startedTimeout bounds waitStarted when its context has no deadline.
const startedTimeout = 60 * time.Second

// waitStarted waits until node n (n.PID) has bound its controller port,
// the last listener a node binds, after it read and checked its config,
// while its process still runs. A node that exits first (a bad setting, a
// port in use, another cluster's directory) is an error carrying its last
// log lines; so is one that binds nothing before ctx ends (or 60 s).
// Readiness needs a quorum and is not waited for: a node restarted after
// its peers died cannot register until they are back.
func waitStarted(ctx context.Context, n Node) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startedTimeout)
		defer cancel()
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if !alive(n.PID) {
			return fmt.Errorf("node %d (pid %d) exited at once; see %s%s", n.ID, n.PID, n.LogFile, logTails(Layout{Nodes: []Node{n}}, 5))
		}
		d := net.Dialer{Timeout: time.Second}
		if c, err := d.DialContext(ctx, "tcp", n.Controller); err == nil {
			c.Close()
			if alive(n.PID) {
				return nil
			}
			continue // it exited meanwhile: say so above
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %d (pid %d) did not listen on %s in time; see %s%s", n.ID, n.PID, n.Controller, n.LogFile, logTails(Layout{Nodes: []Node{n}}, 5))
		case <-tick.C:
		}
	}
}

// startNode starts `<exe> node --config <cfg>` for n in its own session, so
// that it outlives the command that started it, with its output in n's log
// file. It returns the pid.
func startNode(exe string, n Node) (int, error) {
	logf, err := os.OpenFile(n.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	cmd := exec.Command(exe, append([]string{"node", "--config", n.Config}, n.Args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The node's settings come from its server.properties alone: SLUICE_*
	// variables of the caller's shell (which a node would read as config
	// keys) are not passed on.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLUICE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if n.Cgroup != "" {
		cg, err := os.Open(n.Cgroup)
		if err != nil {
			return 0, fmt.Errorf("start node %d: its cgroup: %w", n.ID, err)
		}
		defer cg.Close()
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(cg.Fd())
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start node %d: %w", n.ID, err)
	}
	pid := cmd.Process.Pid
	// Reap it if it dies while we still run, so that alive() sees it gone.
	go func() { _ = cmd.Wait() }()
	return pid, nil
}

// stopNode sends sig to n and waits until it exits or ctx ends; after a
// SIGTERM that does not finish in time it sends SIGKILL.
func stopNode(ctx context.Context, n Node, sig syscall.Signal) error {
	if !alive(n.PID) {
		return nil
	}
	if err := syscall.Kill(n.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal node %d (pid %d): %w", n.ID, n.PID, err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for alive(n.PID) {
		select {
		case <-ctx.Done():
			if sig == syscall.SIGKILL {
				return fmt.Errorf("node %d (pid %d) did not exit after SIGKILL", n.ID, n.PID)
			}
			_ = syscall.Kill(n.PID, syscall.SIGKILL)
			kctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return stopNode(kctx, n, syscall.SIGKILL)
		case <-tick.C:
		}
	}
	return nil
}
