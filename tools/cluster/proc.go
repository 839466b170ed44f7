package cluster

import (
	"context"
	"errors"
	"fmt"
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
