// Command sluice is the one binary of the project: every tool (init, node,
// cluster, topics, soak, bench, ...) is a subcommand whose code lives in its
// own package under tools/ or node/. This file only assembles them.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sluice-log/sluice/tools/cluster"
	"github.com/sluice-log/sluice/tools/initcmd"
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
	root.AddCommand(initcmd.NewCommand(), cluster.NewCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(1)
	}
}
