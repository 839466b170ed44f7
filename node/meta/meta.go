package meta

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-log/sluice/quorum"
)

// MetaFile is the name of the file that marks a formatted directory.
const MetaFile = "meta.properties"

// MetaVersion is the version of meta.properties this build writes and reads.
const MetaVersion = 1

// Errors of this package.
var (
	// ErrNotFormatted: the directory has no meta.properties.
	ErrNotFormatted = errors.New("meta: directory is not formatted")
	// ErrFormatted: Format found meta.properties already.
	ErrFormatted = errors.New("meta: directory is already formatted")
	// ErrMismatch: the directory belongs to another cluster or node.
	ErrMismatch = errors.New("meta: directory belongs to another cluster or node")
	// ErrBadMeta: meta.properties or an argument does not parse.
	ErrBadMeta = errors.New("meta: bad metadata")
)

// Meta is the content of meta.properties.
type Meta struct {
	ClusterID          string
	NodeID             int32
	DirectoryID        quorum.UUID
	InitialControllers []quorum.Voter
}

// Bootstraps reports whether the directory was formatted with initial
// controllers: a controller among them bootstraps the quorum on an empty
// Raft log. A directory formatted without (`sluice init
// --no-initial-controllers`, a replacement controller) never bootstraps:
// its node joins the running quorum as an observer until it is added as
// a voter (`sluice cluster add-controller`).
func (m Meta) Bootstraps() bool { return len(m.InitialControllers) > 0 }

// IsController reports whether the node is one of the initial controllers.
func (m Meta) IsController() bool {
	return slices.ContainsFunc(m.InitialControllers, func(v quorum.Voter) bool { return v.ID == m.NodeID })
}

// ParseControllers parses "id@host:port,id@host:port".
func ParseControllers(s string) ([]quorum.Voter, error) {
	var out []quorum.Voter
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		idS, addr, ok := strings.Cut(part, "@")
		id, err := strconv.ParseInt(idS, 10, 32)
		if !ok || err != nil || id < 0 || !strings.Contains(addr, ":") {
			return nil, fmt.Errorf("%w: controller %q is not id@host:port", ErrBadMeta, part)
		}
		if slices.ContainsFunc(out, func(v quorum.Voter) bool { return v.ID == int32(id) }) {
			return nil, fmt.Errorf("%w: controller id %d repeated", ErrBadMeta, id)
		}
		out = append(out, quorum.Voter{ID: int32(id), Addr: addr})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no initial controllers", ErrBadMeta)
	}
	return out, nil
}

// FormatControllers is the inverse of ParseControllers.
func FormatControllers(vs []quorum.Voter) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%d@%s", v.ID, v.Addr)
	}
	return strings.Join(parts, ",")
}

func (m Meta) validate() error {
	if _, err := quorum.ParseUUID(m.ClusterID); err != nil {
		return fmt.Errorf("%w: cluster id %q is not a base64url UUID (make one with `sluice init random-uuid`)", ErrBadMeta, m.ClusterID)
	}
	if m.NodeID < 0 {
		return fmt.Errorf("%w: node id %d", ErrBadMeta, m.NodeID)
	}
	return nil
}

// Format writes meta.properties into dir (created if missing). A new random
// directory id is chosen when m.DirectoryID is zero. It returns
// ErrFormatted if dir already holds meta.properties.
func Format(dir string, m Meta) (Meta, error) {
	if err := m.validate(); err != nil {
		return m, err
	}
	if m.DirectoryID == (quorum.UUID{}) {
		m.DirectoryID = quorum.NewUUID()
	}
	path := filepath.Join(dir, MetaFile)
	if _, err := os.Stat(path); err == nil {
		return m, fmt.Errorf("%w: %s exists (pass --ignore-formatted to leave it as is)", ErrFormatted, path)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return m, err
	}
	var b strings.Builder
	b.WriteString("# written by sluice init; do not edit\n")
	fmt.Fprintf(&b, "version=%d\ncluster.id=%s\nnode.id=%d\ndirectory.id=%s\ninitial.controllers=%s\n",
		MetaVersion, m.ClusterID, m.NodeID, m.DirectoryID, FormatControllers(m.InitialControllers))
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return m, err
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return m, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return m, err
	}
	if err := f.Close(); err != nil {
		return m, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return m, err
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return m, err
		}
	}
	return m, nil
}

// ReadMeta reads dir's meta.properties.
func ReadMeta(dir string) (Meta, error) {
	path := filepath.Join(dir, MetaFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return Meta{}, fmt.Errorf("%w: %s has no %s", ErrNotFormatted, dir, MetaFile)
	}
	if err != nil {
		return Meta{}, err
	}
	defer f.Close()
	props := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return Meta{}, fmt.Errorf("%w: %s: line %q", ErrBadMeta, path, line)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		return Meta{}, err
	}
	if v := props["version"]; v != strconv.Itoa(MetaVersion) {
		return Meta{}, fmt.Errorf("%w: %s: version %q, this build reads %d", ErrBadMeta, path, v, MetaVersion)
	}
	var m Meta
	m.ClusterID = props["cluster.id"]
	id, err := strconv.ParseInt(props["node.id"], 10, 32)
	if err != nil {
		return Meta{}, fmt.Errorf("%w: %s: node.id %q", ErrBadMeta, path, props["node.id"])
	}
	m.NodeID = int32(id)
	if m.DirectoryID, err = quorum.ParseUUID(props["directory.id"]); err != nil {
		return Meta{}, fmt.Errorf("%w: %s: directory.id: %v", ErrBadMeta, path, err)
	}
	if v := props["initial.controllers"]; v != "" { // empty: --no-initial-controllers
		if m.InitialControllers, err = ParseControllers(v); err != nil {
			return Meta{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := m.validate(); err != nil {
		return Meta{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Verify is what a node calls before it starts: dir must be formatted, for
// this node id and (when clusterID is not empty) this cluster. The errors
// say what to run.
func Verify(dir string, clusterID string, nodeID int32) (Meta, error) {
	m, err := ReadMeta(dir)
	if errors.Is(err, ErrNotFormatted) {
		return m, fmt.Errorf("%w; format it first: `sluice init --dir %s --cluster-id $(sluice init random-uuid) --node-id %d --initial-controllers ID@HOST:PORT,...` (or --standalone for a one-node cluster)",
			err, dir, nodeID)
	}
	if err != nil {
		return m, err
	}
	if clusterID != "" && m.ClusterID != clusterID {
		return m, fmt.Errorf("%w: %s was formatted for cluster %s, not %s; point the node at its own directory, or reformat this one (losing its data) with `rm %s && sluice init --dir %s --cluster-id %s --node-id %d ...`",
			ErrMismatch, dir, m.ClusterID, clusterID, filepath.Join(dir, MetaFile), dir, clusterID, nodeID)
	}
	if m.NodeID != nodeID {
		return m, fmt.Errorf("%w: %s was formatted for node %d, not %d; use the directory of node %d or set node.id=%d",
			ErrMismatch, dir, m.NodeID, nodeID, nodeID, m.NodeID)
	}
	return m, nil
}
