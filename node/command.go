package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-log/sluice/node/config"
)

// shutdownGrace bounds the wait for Kafka requests in flight at shutdown.
const shutdownGrace = 30 * time.Second

// NewCommand returns `sluice node`: run a node until SIGINT or SIGTERM,
// then shut down cleanly (see Node.Close).
func NewCommand() *cobra.Command { return newCommand(nil) }

// newCommand is NewCommand with a hook called once the node serves (tests).
func newCommand(started func(*Node)) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run a Sluice node (broker and/or controller)",
		Long: `node runs one Sluice process. Settings are Kafka's server.properties keys,
read from --config FILE, from SLUICE_* environment variables (SLUICE_LOG_DIRS
for log.dirs) and from flags named after the keys (--log.dirs=/data), the
last winning. The data directory (log.dirs) must have been formatted with
sluice init. SIGINT or SIGTERM stops the node cleanly.`,
		Example: `  sluice init --dir ./data --cluster-id $(sluice init random-uuid) --node-id 1 --standalone --controller-addr localhost:9093
  sluice node --node.id=1 --log.dirs=./data --listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cmd.Flags(), nil)
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			n, err := Open(cfg, Options{Logger: log})
			if err != nil {
				return err
			}
			if started != nil {
				started(n)
			}
			log.Info("sluice node started", "node.id", cfg.NodeID, "kafka", n.KafkaAddr(), "controller", n.ControllerAddr())
			<-ctx.Done()
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
	return cmd
}
