package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-log/sluice/tools/cluster"
)

// The docker backend (--docker): the soak's nodes are the containers of a
// compose project (deploy/compose.yaml, and deploy/compose.brokers.yaml
// for the broker-only nodes a host loss needs), each its own host with
// its own address on a user-defined network. The workload, the checker
// and the report are the process backend's; only starting, stopping and
// the faults differ (dockerfaults.go).

// dockerHosts is a running compose project.
type dockerHosts struct {
	project string
	files   []string
	image   string
	network string // the project's network, <project>_net
	out     io.Writer

	mu    sync.Mutex
	nodes []*dockerNode // by broker id, current (a host loss replaces one)
	// extra are the containers and volumes a host loss created outside
	// compose; stop removes them.
	extraContainers, extraVolumes []string
	nextID                        int32 // the next broker id a replacement host gets
	// hostLosses counts host-loss faults (they alternate: a controller,
	// then a broker-only host); replaced counts controllers replaced.
	hostLosses, replaced int
}

// dockerNode is one container of the project.
type dockerNode struct {
	id        int32
	service   string // compose service, also the hostname and alias
	container string // id
	ip        string // on the project's network
	pid       int    // of the node process, in the host's pid namespace (docker inspect State.Pid)
	// voter: a Raft voter (SLUICE_PROCESS_ROLES has controller); a host
	// loss picks only broker-only nodes (a voter that lost its disk is
	// a quorum reconfiguration, not a reassignment).
	voter  bool
	env    []string
	ports  []string // "127.0.0.1:19095:19095"
	volume string
}

// inspect is the part of `docker inspect` the soak reads.
type inspect struct {
	ID     string `json:"Id"`
	Config struct {
		Hostname string            `json:"Hostname"`
		Env      []string          `json:"Env"`
		Labels   map[string]string `json:"Labels"`
	} `json:"Config"`
	State struct {
		Running bool `json:"Running"`
		Paused  bool `json:"Paused"`
		Pid     int  `json:"Pid"`
		Health  *struct {
			Status string `json:"Status"`
		} `json:"Health"`
	} `json:"State"`
	NetworkSettings struct {
		Networks map[string]struct {
			IPAddress string `json:"IPAddress"`
		} `json:"Networks"`
		Ports map[string][]struct {
			HostIP   string `json:"HostIp"`
			HostPort string `json:"HostPort"`
		} `json:"Ports"`
	} `json:"NetworkSettings"`
	Mounts []struct {
		Type        string `json:"Type"`
		Name        string `json:"Name"`
		Destination string `json:"Destination"`
	} `json:"Mounts"`
}

// command runs name with args and returns its combined output; an error
// carries the output.
func command(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func (d *dockerHosts) compose(ctx context.Context, args ...string) (string, error) {
	full := []string{"-p", d.project}
	for _, f := range d.files {
		full = append(full, "-f", f)
	}
	cmd := exec.CommandContext(ctx, "docker-compose", append(full, args...)...)
	cmd.Env = append(cmd.Environ(), "SLUICE_IMAGE="+d.image)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker-compose %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func dockerInspect(ctx context.Context, container string) (inspect, error) {
	out, err := command(ctx, "docker", "inspect", container)
	if err != nil {
		return inspect{}, err
	}
	var is []inspect
	if err := json.Unmarshal([]byte(out), &is); err != nil || len(is) != 1 {
		return inspect{}, fmt.Errorf("docker inspect %s: %d answers (%v)", container, len(is), err)
	}
	return is[0], nil
}

func envOf(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// startDocker removes what an earlier run of the project left, starts the
// compose project and waits until every node answers /readyz.
func startDocker(ctx context.Context, w io.Writer, o *Options) (*dockerHosts, error) {
	for _, bin := range []string{"docker", "docker-compose", "iptables", "nsenter"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("soak --docker needs %s on PATH (Docker Engine, docker-compose, iptables, util-linux)", bin)
		}
	}
	d := &dockerHosts{project: o.ComposeProject, files: o.ComposeFiles, image: o.Image, network: o.ComposeProject + "_net", out: w}
	if _, err := command(ctx, "docker", "image", "inspect", d.image); err != nil {
		return nil, fmt.Errorf("no image %s: build it with make image: %w", d.image, err)
	}
	d.removeLeftovers(ctx)
	if _, err := d.compose(ctx, "down", "-v", "--remove-orphans"); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "soak: docker-compose -p %s %s up -d (image %s)\n", d.project, strings.Join(d.files, " "), d.image)
	if _, err := d.compose(ctx, "up", "-d"); err != nil {
		return d, err
	}
	out, err := d.compose(ctx, "ps", "-q")
	if err != nil {
		return d, err
	}
	for _, c := range strings.Fields(out) {
		n, err := d.describe(ctx, c)
		if err != nil {
			return d, err
		}
		d.nodes = append(d.nodes, n)
		d.nextID = max(d.nextID, n.id+1)
	}
	slices.SortFunc(d.nodes, func(a, b *dockerNode) int { return int(a.id - b.id) })
	d.nextID = max(d.nextID, 100) // replacement hosts: 100, 101, ...
	for _, n := range d.nodes {
		if err := d.waitReady(ctx, n, 2*time.Minute); err != nil {
			return d, err
		}
	}
	return d, nil
}

// describe reads a container's node id, address, pid and settings.
func (d *dockerHosts) describe(ctx context.Context, container string) (*dockerNode, error) {
	is, err := dockerInspect(ctx, container)
	if err != nil {
		return nil, err
	}
	id, err := strconv.ParseInt(envOf(is.Config.Env, "SLUICE_NODE_ID"), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("container %s: SLUICE_NODE_ID: %v", container, err)
	}
	n := &dockerNode{id: int32(id), container: is.ID, pid: is.State.Pid, env: is.Config.Env,
		service: is.Config.Labels["com.docker.compose.service"],
		voter:   strings.Contains(envOf(is.Config.Env, "SLUICE_PROCESS_ROLES"), "controller")}
	if n.service == "" {
		n.service = is.Config.Hostname
	}
	if nw, ok := is.NetworkSettings.Networks[d.network]; ok {
		n.ip = nw.IPAddress
	}
	for p, bs := range is.NetworkSettings.Ports {
		for _, b := range bs {
			if b.HostPort != "" {
				n.ports = append(n.ports, b.HostIP+":"+b.HostPort+":"+strings.TrimSuffix(p, "/tcp"))
			}
		}
	}
	for _, m := range is.Mounts {
		if m.Type == "volume" && m.Destination == "/var/lib/sluice" {
			n.volume = m.Name
		}
	}
	if n.ip == "" {
		return nil, fmt.Errorf("container %s (node %d) has no address on %s", container, id, d.network)
	}
	return n, nil
}

// seeds are the nodes' EXTERNAL listeners published on the host.
func (d *dockerHosts) seeds() []string {
	var s []string
	for _, n := range d.nodes {
		for _, a := range strings.Split(envOf(n.env, "SLUICE_ADVERTISED_LISTENERS"), ",") {
			if name, addr, ok := strings.Cut(a, "://"); ok && name == "EXTERNAL" {
				s = append(s, addr)
			}
		}
	}
	return s
}

// layout is the project as a cluster.Layout: what the parts of the soak
// that read the nodes' HTTP endpoints (/readyz, /metrics) need.
func (d *dockerHosts) layout() cluster.Layout {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := cluster.Layout{BootstrapServers: strings.Join(d.seeds(), ",")}
	for _, n := range d.nodes {
		l.Nodes = append(l.Nodes, cluster.Node{ID: n.id, PID: n.pid, Kafka: n.ip + ":9092", Controller: n.ip + ":9093",
			Gossip: n.ip + ":7946", HTTP: n.ip + ":9644", LogFile: "docker logs " + n.container[:12]})
	}
	return l
}

func (d *dockerHosts) node(id int32) (*dockerNode, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range d.nodes {
		if n.id == id {
			return n, true
		}
	}
	return nil, false
}

// waitReady waits until the node answers 200 on /readyz (registered,
// caught up with the metadata) at its address on the network.
func (d *dockerHosts) waitReady(ctx context.Context, n *dockerNode, within time.Duration) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(within)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.ip+":9644/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := hc.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || !wait(ctx, 250*time.Millisecond) {
			return fmt.Errorf("node %d (container %s, %s) not ready on /readyz after %v (see docker logs %s)", n.id, n.container[:12], n.ip, within, n.container[:12])
		}
	}
}

// start starts a stopped container again, refreshes its pid and waits
// until it is ready.
func (d *dockerHosts) start(ctx context.Context, n *dockerNode) error {
	if _, err := command(ctx, "docker", "start", n.container); err != nil {
		return err
	}
	if is, err := dockerInspect(ctx, n.container); err == nil {
		d.mu.Lock()
		n.pid = is.State.Pid
		d.mu.Unlock()
	}
	return d.waitReady(ctx, n, 90*time.Second)
}

// running reports whether the container runs (and is not paused).
func (d *dockerHosts) running(ctx context.Context, n *dockerNode) bool {
	is, err := dockerInspect(ctx, n.container)
	return err == nil && is.State.Running && !is.State.Paused
}

// ensureRunning starts (or unpauses) every container that is not running;
// it returns the ids of the nodes it started.
func (d *dockerHosts) ensureRunning(ctx context.Context) ([]int32, error) {
	d.mu.Lock()
	nodes := slices.Clone(d.nodes)
	d.mu.Unlock()
	var started []int32
	var errs []error
	for _, n := range nodes {
		is, err := dockerInspect(ctx, n.container)
		switch {
		case err != nil:
			errs = append(errs, err)
		case is.State.Paused:
			_, err = command(ctx, "docker", "unpause", n.container)
			errs = append(errs, err)
		case !is.State.Running:
			started = append(started, n.id)
			errs = append(errs, d.start(ctx, n))
		}
	}
	return started, errors.Join(errs...)
}

// dialable reports whether the node's Kafka port answers from the host
// within a second: the network reaches it.
func dialable(ip string) error {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "9092"), time.Second)
	if err == nil {
		_ = c.Close()
	}
	return err
}

// removeLeftovers removes containers and volumes of the project that a
// host loss created (labelled sluice.soak.project) and compose does not
// know about.
func (d *dockerHosts) removeLeftovers(ctx context.Context) {
	label := "label=sluice.soak.project=" + d.project
	if out, err := command(ctx, "docker", "ps", "-aq", "--filter", label); err == nil && strings.TrimSpace(out) != "" {
		_, _ = command(ctx, "docker", append([]string{"rm", "-f"}, strings.Fields(out)...)...)
	}
	if out, err := command(ctx, "docker", "volume", "ls", "-q", "--filter", label); err == nil && strings.TrimSpace(out) != "" {
		_, _ = command(ctx, "docker", append([]string{"volume", "rm", "-f"}, strings.Fields(out)...)...)
	}
}

// stop removes the project: its containers, network and volumes, and
// those a host loss created.
func (d *dockerHosts) stop(ctx context.Context) error {
	d.removeLeftovers(ctx)
	_, err := d.compose(ctx, "down", "-v", "--remove-orphans")
	return err
}

// restartDeadDocker is restartDead for the docker backend: a container
// found stopped between faults (its node exited by itself) is started
// again and recorded as a NodeExited event.
func (f *faulter) restartDeadDocker(ctx context.Context) {
	d := f.hosts
	d.mu.Lock()
	nodes := slices.Clone(d.nodes)
	d.mu.Unlock()
	for _, n := range nodes {
		if d.running(ctx, n) {
			continue
		}
		fl := Fault{Kind: NodeExited, Start: time.Now(), Nodes: []int32{n.id},
			Target: fmt.Sprintf("node %d's container %s stopped by itself; started", n.id, n.container[:12])}
		if out, err := command(ctx, "docker", "logs", "--tail", "8", n.container); err == nil {
			fl.Effect = "its log ended: " + strings.Join(strings.Split(strings.TrimSpace(out), "\n"), " | ")
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		if _, err := d.ensureRunning(rctx); err != nil {
			fl.Target += " (error: " + err.Error() + ")"
		}
		cancel()
		fl.Healed = time.Now()
		f.faults = append(f.faults, fl)
		fmt.Fprintf(f.out, "NODE EXITED    %s; %s\n", fl.Target, fl.Effect)
	}
}

// validateDocker checks the options of a --docker run.
func (o *Options) validateDocker() error {
	switch {
	case o.NegativeControl != "":
		return fmt.Errorf("--negative-control %s runs on node processes (its scenarios stop processes with signals): drop --docker", o.NegativeControl)
	case len(o.ComposeFiles) == 0 || o.ComposeProject == "" || o.Image == "":
		return errors.New("--docker needs --compose-file, --compose-project and --image")
	case len(o.NodeConfigs) > 0:
		return errors.New("--node-config does not reach containers: set SLUICE_* variables in the compose file instead (docs/deploy.md)")
	}
	for _, k := range o.Faults {
		if !slices.Contains(DockerFaults, k) {
			return fmt.Errorf("--faults: %s is no fault of the docker backend (known: %s)", k, strings.Join(DockerFaults, ","))
		}
	}
	o.PowerLoss, o.NetFaults = false, false
	return nil
}

// quota is the run's fault quota: the docker backend's or the process
// backend's.
func (o *Options) quota() map[string]int {
	if o.Docker {
		return dockerQuotaFor(o.Faults, o.Duration)
	}
	return quotaFor(o.Faults, o.Duration)
}

// startDockerRun starts the compose project of a --docker run and returns
// it with the function that removes it at the end (unless --keep).
func startDockerRun(ctx context.Context, w io.Writer, o *Options) (*dockerHosts, func(), error) {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil { // the report's
		return nil, nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	hosts, err := startDocker(sctx, w, o)
	stop := func() {
		if o.Keep {
			fmt.Fprintf(w, "soak: --keep: the project %s is still running; remove it with docker-compose -p %s %s down -v\n", o.ComposeProject, o.ComposeProject, "-f "+strings.Join(o.ComposeFiles, " -f "))
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := hosts.stop(sctx); err != nil {
			fmt.Fprintf(w, "soak: WARNING: removing the compose project: %v\n", err)
		}
	}
	if err != nil {
		if hosts != nil {
			stop()
		}
		return nil, nil, fmt.Errorf("soak --docker: start the compose project: %w", err)
	}
	o.Nodes = len(hosts.nodes)
	var ids []string
	for _, n := range hosts.nodes {
		role := "broker"
		if n.voter {
			role = "broker+controller"
		}
		ids = append(ids, fmt.Sprintf("%d=%s(%s, %s)", n.id, n.service, n.ip, role))
	}
	fmt.Fprintf(w, "soak: %d containers: %s; clients use %s\n", len(hosts.nodes), strings.Join(ids, " "), strings.Join(hosts.seeds(), ","))
	fmt.Fprintln(w, "soak: the containers share the host's clock: no fault here skews clocks, and the checker reads only this process's clock")
	return hosts, stop, nil
}
