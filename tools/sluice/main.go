// Command sluice is the one binary of the project: every tool (init, node,
// cluster, topics, soak, bench, ...) is a subcommand whose code lives in its
// own package under tools/ or node/. This file only assembles them.
package main

import (
	"errors"
	"fmt"
	"github.com/sluice-log/sluice/tools/internal/cli"
	"os"

	"github.com/spf13/cobra"

	"github.com/sluice-log/sluice/tools/admin"
	"github.com/sluice-log/sluice/tools/bench"
	"github.com/sluice-log/sluice/tools/cluster"
	"github.com/sluice-log/sluice/tools/demo"
	"github.com/sluice-log/sluice/tools/healthcheck"
	"github.com/sluice-log/sluice/tools/initcmd"
	"github.com/sluice-log/sluice/tools/nodecmd"
	"github.com/sluice-log/sluice/tools/soak"
	"github.com/sluice-log/sluice/tools/tune"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	root := &cobra.Command{
		Use:           "sluice",
		Short:         "Sluice: a replicated commit log that speaks the Kafka protocol",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	clusterCmd := cluster.NewCommand()
	clusterCmd.AddCommand(admin.NewHealthCommand(), admin.NewInfoCommand(), admin.NewDecommissionCommand(), admin.NewUnregisterCommand(),
		admin.NewAddControllerCommand(), admin.NewRemoveControllerCommand())
	root.AddCommand(initcmd.NewCommand(), nodecmd.NewCommand(), clusterCmd, admin.NewTopicsCommand(), admin.NewConfigsCommand(), admin.NewACLsCommand(), admin.NewQuorumCommand(), admin.NewFeaturesCommand(), admin.NewLeadersCommand(), admin.NewGroupsCommand(), admin.NewTransactionsCommand(), admin.NewProduceCommand(), admin.NewConsumeCommand(), admin.NewPerfCommand(), demo.NewCommand(), tune.NewCommand(), bench.NewCommand(), soak.NewCommand(), healthcheck.NewCommand())
	if err := root.Execute(); err != nil {
		if errors.Is(err, cli.ErrProblem) {
			os.Exit(2) // the command worked and found a problem (health, filters)
		}
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(1)
	}
}
