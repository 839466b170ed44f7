package nodecmd

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/spf13/cobra"

	"github.com/sluice-log/sluice/node"
	"github.com/sluice-log/sluice/node/config"
	"github.com/sluice-log/sluice/tools/soak/powerfs"
)

// shutdownGrace bounds the wait for Kafka requests in flight at shutdown.
const shutdownGrace = 30 * time.Second

// NewCommand returns `sluice node`: run a node until SIGINT or SIGTERM,
// then shut down cleanly (see node.Node.Close).
func NewCommand() *cobra.Command { return newCommand(nil) }

// newCommand is NewCommand with a hook called once the node serves (tests).
func newCommand(started func(*node.Node)) *cobra.Command {
	var powerJournal string
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run a Sluice node (broker and/or controller)",
		Long: `node runs one Sluice process. Settings are Kafka's server.properties keys,
read from --config FILE, from SLUICE_* environment variables (SLUICE_LOG_DIRS
for log.dirs) and from flags named after the keys (--log.dirs=/data), the
last winning. The data directory (log.dirs) must have been formatted with
sluice init, or initial.controllers and cluster.id must be set: the node
then formats an empty directory itself on first start (a container's
volume) and only verifies a formatted one, refusing another cluster's.
SIGINT or SIGTERM stops the node cleanly. SIGHUP rereads the SSL
listeners' keystore and truststore files (as sluice.ssl.reload.interval.ms
does): new connections use the renewed certificates; and it rereads
sluice.gossip.encryption.keys from the configuration, so gossip keys
rotate without restarts (docs/deploy.md).`,
		Example: `  sluice init --dir ./data --cluster-id $(sluice init random-uuid) --node-id 1 --standalone --controller-addr localhost:9093
  sluice node --node.id=1 --log.dirs=./data --listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cmd.Flags(), nil)
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			if formatted, err := cfg.FormatIfEmpty(); err != nil {
				return err
			} else if formatted {
				log.Info("formatted an empty data directory (initial.controllers)", "dir", cfg.LogDirs[0], "cluster.id", cfg.ClusterID, "node.id", cfg.NodeID)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// SIGHUP reloads certificates (registered before the node
			// serves, so an early one is not fatal).
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			opts := node.Options{Logger: log}
			if powerJournal != "" {
				pfs, err := powerfs.New(vfs.Default, powerJournal)
				if err != nil {
					return err
				}
				defer pfs.Close()
				opts.FS = pfs
				log.Info("partition logs on the power-loss filesystem (sluice soak)", "journal", powerJournal)
			}
			n, err := node.Open(cfg, opts)
			if err != nil {
				return err
			}
			if started != nil {
				started(n)
			}
			log.Info("sluice node started", "node.id", cfg.NodeID, "kafka", n.KafkaAddr(), "controller", n.ControllerAddr())
			keys := cfg.GossipKeys
		run:
			for {
				select {
				case <-ctx.Done():
					break run
				case <-hup:
					log.Info("SIGHUP: reloading the SSL listeners' certificates and the gossip keys")
					n.ReloadTLS()
					keys = reloadGossipKeys(cmd, log, n, keys)
				}
			}
			log.Info("sluice node stopping")
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			if err := n.Close(sctx); err != nil {
				return fmt.Errorf("node: shutdown: %w", err)
			}
			log.Info("sluice node stopped cleanly")
			return nil
		},
	}
	config.Flags(cmd.Flags())
	// Hidden, for sluice soak: journal what the logs made durable so that
	// a simulated power loss can drop the rest (tools/soak/powerfs).
	cmd.Flags().StringVar(&powerJournal, powerfs.Flag, "", "journal of durable writes for simulated power loss (sluice soak)")
	_ = cmd.Flags().MarkHidden(powerfs.Flag)
	return cmd
}

// reloadGossipKeys rereads the configuration and, when
// sluice.gossip.encryption.keys changed from current, gives the node the
// new keys; it returns the keys in effect. Other keys take effect at the
// next start.
func reloadGossipKeys(cmd *cobra.Command, log *slog.Logger, n *node.Node, current [][]byte) [][]byte {
	cfg, err := config.Load(cmd.Flags(), nil)
	if err != nil {
		log.Error("SIGHUP: the configuration does not load; gossip keys unchanged", "err", err)
		return current
	}
	if slices.EqualFunc(cfg.GossipKeys, current, bytes.Equal) {
		return current
	}
	if err := n.SetGossipKeys(cfg.GossipKeys); err != nil {
		log.Error("SIGHUP: gossip keys unchanged", "err", err)
		return current
	}
	log.Info("SIGHUP: gossip keys changed; the first encrypts, all decrypt", "keys", len(cfg.GossipKeys))
	return cfg.GossipKeys
}
