package meta

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluice-log/sluice/quorum"
)

// BootstrapFile holds the metadata records a new cluster starts with,
// written by `sluice init --add-scram` beside meta.properties, as Kafka's
// bootstrap.checkpoint: the SCRAM credentials (salted, never a password)
// that the first active controller writes with the cluster id. It is
// read at every start and ignored once the cluster id is written.
const BootstrapFile = "bootstrap.json"

// bootstrap is BootstrapFile's JSON.
type bootstrap struct {
	Version int                            `json:"version"`
	Scram   []quorum.ScramCredentialRecord `json:"scram,omitempty"`
}

// WriteBootstrap writes dir's BootstrapFile (mode 0600) with scram,
// durably (temporary file, fsync, rename).
func WriteBootstrap(dir string, scram []quorum.ScramCredentialRecord) error {
	b, err := json.MarshalIndent(bootstrap{Version: 1, Scram: scram}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, BootstrapFile)
	f, err := os.OpenFile(path+".tmp", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// ReadBootstrap reads dir's BootstrapFile; none is no records.
func ReadBootstrap(dir string) ([]quorum.ScramCredentialRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, BootstrapFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var bs bootstrap
	if err := json.Unmarshal(b, &bs); err != nil || bs.Version != 1 {
		return nil, fmt.Errorf("meta: %s: not a version 1 bootstrap file (%v)", filepath.Join(dir, BootstrapFile), err)
	}
	return bs.Scram, nil
}
