package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/sluice-log/sluice/node/config"
)

// deployDir is the repository's deploy/ directory.
const deployDir = "../../deploy"

// yamlDocs decodes every document of a (multi-document) YAML file.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if m != nil {
			docs = append(docs, m)
		}
	}
}

// dig follows keys (string for maps, int for lists) into v.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// loadEnv validates a node's environment with node/config, as `sluice
// node` would read it (nothing is opened).
func loadEnv(t *testing.T, where string, env map[string]string) *config.Config {
	t.Helper()
	var kv []string
	for k, v := range env {
		if strings.HasPrefix(k, config.EnvPrefix+"_") {
			kv = append(kv, k+"="+v)
		}
	}
	c, err := config.Load(nil, kv)
	if err != nil {
		t.Fatalf("%s: the node would refuse its environment: %v", where, err)
	}
	return c
}

// imageEnv is the ENV of deploy/Dockerfile (KEY=VALUE words, continued
// lines joined), what a container starts with.
func imageEnv(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "ENV" {
			continue
		}
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("Dockerfile: ENV %q: use KEY=VALUE", kv)
			}
			env[k] = v
		}
	}
	if env["SLUICE_LOG_DIRS"] == "" {
		t.Fatal("Dockerfile: no ENV SLUICE_LOG_DIRS (the volume)")
	}
	return env
}

// TestComposeFiles: every service of compose.yaml and compose.brokers.yaml
// has an environment node/config accepts, its own hostname, node id,
// address and published EXTERNAL port advertised as 127.0.0.1:port, and
// the voters and cluster id of the others.
func TestComposeFiles(t *testing.T) {
	services := map[string]any{}
	for _, f := range []string{"compose.yaml", "compose.brokers.yaml"} {
		doc := yamlDocs(t, filepath.Join(deployDir, f))[0]
		for name, s := range doc["services"].(map[string]any) {
			services[name] = s
		}
	}
	if len(services) != 5 {
		t.Fatalf("%d services, want 3 combined and 2 broker-only", len(services))
	}
	ids, ips, ports := map[int32]string{}, map[string]string{}, map[string]string{}
	var clusterID, voters string
	for name, s := range services {
		if h := dig(s, "hostname"); h != name {
			t.Errorf("%s: hostname %v, want the service name (the INTERNAL listener is advertised by it)", name, h)
		}
		env := imageEnv(t)
		for k, v := range dig(s, "environment").(map[string]any) {
			env[k] = fmt.Sprint(v)
		}
		c := loadEnv(t, name, env)
		if other, ok := ids[c.NodeID]; ok {
			t.Errorf("%s and %s share node id %d", name, other, c.NodeID)
		}
		ids[c.NodeID] = name
		if clusterID == "" {
			clusterID, voters = c.ClusterID, env["SLUICE_CONTROLLER_QUORUM_VOTERS"]
		}
		if c.ClusterID != clusterID || env["SLUICE_CONTROLLER_QUORUM_VOTERS"] != voters || env["SLUICE_INITIAL_CONTROLLERS"] != voters {
			t.Errorf("%s: cluster id or voters differ from the other services'", name)
		}
		if in, _ := c.Advertised("INTERNAL"); in.Host != name || c.InterBrokerListener != "INTERNAL" {
			t.Errorf("%s: INTERNAL advertised as %s (inter-broker %s), want %s:9092", name, in.Addr(), c.InterBrokerListener, name)
		}
		ext, _ := c.Advertised("EXTERNAL")
		published := fmt.Sprint(dig(s, "ports", 0))
		if ext.Host != "127.0.0.1" || published != fmt.Sprintf("127.0.0.1:%d:%d", ext.Port, ext.Port) {
			t.Errorf("%s: EXTERNAL advertised as %s but published as %q", name, ext.Addr(), published)
		}
		ports[published] = name
		ip := fmt.Sprint(dig(s, "networks", "net", "ipv4_address"))
		if other, ok := ips[ip]; ok || ip == "<nil>" {
			t.Errorf("%s: address %s (also %s): every node needs its own fixed one", name, ip, other)
		}
		ips[ip] = name
		if wantCtrl := slices.ContainsFunc(strings.Split(voters, ","), func(v string) bool { return strings.HasPrefix(v, fmt.Sprintf("%d@", c.NodeID)) }); wantCtrl != c.Controller {
			t.Errorf("%s: process.roles controller=%v, but voters %s", name, c.Controller, voters)
		}
	}
	if len(ports) != 5 {
		t.Errorf("published ports %v: want one per node", ports)
	}
}

// TestKubernetesManifests: the StatefulSet, its headless service, the
// client service and the PodDisruptionBudget agree on names and labels,
// probe /readyz, and give the node an environment node/config accepts
// once Kubernetes has expanded $(POD_NAME) and the downward API.
func TestKubernetesManifests(t *testing.T) {
	kinds := map[string]map[string]any{}
	files, err := filepath.Glob(filepath.Join(deployDir, "k8s", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/k8s: %v", err)
	}
	for _, f := range files {
		for _, d := range yamlDocs(t, f) {
			kind, name := fmt.Sprint(d["kind"]), fmt.Sprint(dig(d, "metadata", "name"))
			if d["apiVersion"] == nil || kind == "<nil>" || name == "<nil>" {
				t.Fatalf("%s: a document without apiVersion, kind or metadata.name", f)
			}
			kinds[kind+"/"+name] = d
		}
	}
	sts, headless, pdb := kinds["StatefulSet/sluice"], kinds["Service/sluice-headless"], kinds["PodDisruptionBudget/sluice"]
	if sts == nil || headless == nil || pdb == nil || kinds["Service/sluice"] == nil {
		t.Fatalf("want StatefulSet/sluice, Service/sluice-headless, Service/sluice and PodDisruptionBudget/sluice; have %v", slices.Sorted(mapsKeys(kinds)))
	}
	if dig(sts, "spec", "serviceName") != "sluice-headless" || dig(headless, "spec", "clusterIP") != "None" || dig(headless, "spec", "publishNotReadyAddresses") != true {
		t.Error("the StatefulSet's serviceName must be a headless service (clusterIP None) that publishes not-ready pods (the quorum forms before readiness)")
	}
	if dig(sts, "spec", "podManagementPolicy") != "Parallel" {
		t.Error("podManagementPolicy must be Parallel: pod 0 is not ready until a quorum of pods runs")
	}
	labels := fmt.Sprint(dig(sts, "spec", "template", "metadata", "labels"))
	for _, sel := range []any{dig(sts, "spec", "selector", "matchLabels"), dig(headless, "spec", "selector"), dig(pdb, "spec", "selector", "matchLabels"), dig(kinds["Service/sluice"], "spec", "selector")} {
		if fmt.Sprint(sel) != labels {
			t.Errorf("selector %v does not match the pod labels %s", sel, labels)
		}
	}
	if dig(pdb, "spec", "maxUnavailable") != 1 {
		t.Errorf("PodDisruptionBudget maxUnavailable %v, want 1", dig(pdb, "spec", "maxUnavailable"))
	}
	ctr := dig(sts, "spec", "template", "spec", "containers", 0)
	if dig(ctr, "readinessProbe", "httpGet", "path") != "/readyz" || dig(ctr, "readinessProbe", "httpGet", "port") != "http" {
		t.Errorf("readiness probe %v, want GET /readyz on the http port", dig(ctr, "readinessProbe"))
	}
	mount := dig(ctr, "volumeMounts", 0, "mountPath")
	claim := dig(sts, "spec", "volumeClaimTemplates", 0, "metadata", "name")
	if mount != "/var/lib/sluice" || dig(ctr, "volumeMounts", 0, "name") != claim {
		t.Errorf("data volume %v at %v, want the claim %v at /var/lib/sluice", dig(ctr, "volumeMounts", 0, "name"), mount, claim)
	}
	// The pod of ordinal 1, as Kubernetes would expand its environment.
	vars := map[string]string{"POD_NAME": "sluice-1", "POD_IP": "10.1.2.3"}
	ref := regexp.MustCompile(`\$\(([A-Z_]+)\)`)
	env := map[string]string{}
	for _, e := range dig(ctr, "env").([]any) {
		name := fmt.Sprint(dig(e, "name"))
		switch path := fmt.Sprint(dig(e, "valueFrom", "fieldRef", "fieldPath")); {
		case path == "metadata.labels['apps.kubernetes.io/pod-index']":
			env[name] = "1"
		case path != "<nil>":
			env[name] = vars[name]
		default:
			env[name] = ref.ReplaceAllStringFunc(fmt.Sprint(dig(e, "value")), func(m string) string { return env[ref.FindStringSubmatch(m)[1]] })
		}
	}
	c := loadEnv(t, "StatefulSet/sluice", env)
	if a, _ := c.Advertised(config.ListenerKafka); c.NodeID != 1 || a.Host != "sluice-1.sluice-headless.default.svc" {
		t.Errorf("pod sluice-1: node id %d, advertised %s", c.NodeID, a.Addr())
	}
	var portNames []string
	for _, p := range dig(ctr, "ports").([]any) {
		portNames = append(portNames, fmt.Sprint(dig(p, "name")))
	}
	for _, p := range dig(headless, "spec", "ports").([]any) {
		if !slices.Contains(portNames, fmt.Sprint(dig(p, "name"))) {
			t.Errorf("headless service port %v is not a container port", dig(p, "name"))
		}
	}
}

func mapsKeys(m map[string]map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestSystemdUnit: the unit parses as ini sections with the keys a
// service needs, runs `sluice node --config` on a properties file that
// node/config accepts (deploy/systemd/server.properties), and raises the
// file-descriptor limit.
func TestSystemdUnit(t *testing.T) {
	f, err := os.Open(filepath.Join(deployDir, "systemd", "sluice.service"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sections := map[string]map[string]string{}
	var cur map[string]string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			cur = map[string]string{}
			sections[line[1:len(line)-1]] = cur
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || cur == nil {
				t.Fatalf("sluice.service:%d: %q is neither a [section] nor key=value in one", n, line)
			}
			cur[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	for sec, keys := range map[string][]string{
		"Unit":    {"Description", "After", "Wants"},
		"Service": {"ExecStart", "User", "Restart", "LimitNOFILE", "KillSignal", "TimeoutStopSec"},
		"Install": {"WantedBy"},
	} {
		for _, k := range keys {
			if sections[sec][k] == "" {
				t.Errorf("sluice.service: [%s] has no %s", sec, k)
			}
		}
	}
	exec := strings.Fields(sections["Service"]["ExecStart"])
	if len(exec) != 4 || !filepath.IsAbs(exec[0]) || exec[1] != "node" || exec[2] != "--config" {
		t.Fatalf("ExecStart %q, want /path/sluice node --config FILE", exec)
	}
	if sections["Service"]["KillSignal"] != "SIGTERM" {
		t.Error("KillSignal must be SIGTERM, the node's clean shutdown")
	}
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	config.Flags(fs)
	if err := fs.Parse([]string{"--config", filepath.Join(deployDir, "systemd", "server.properties")}); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(fs, []string{})
	if err != nil {
		t.Fatalf("deploy/systemd/server.properties: %v", err)
	}
	if !strings.Contains(sections["Service"]["ReadWritePaths"], c.LogDirs[0]) {
		t.Errorf("ReadWritePaths %q does not include log.dirs %s", sections["Service"]["ReadWritePaths"], c.LogDirs[0])
	}
}
