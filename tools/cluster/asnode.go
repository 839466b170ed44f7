package cluster

import (
	"fmt"
	"os"

	"github.com/sluice-log/sluice/tools/nodecmd"
)

// ServeAsNode makes a test binary a real `sluice node` when it was started
// as `<binary> node --config F`, as clusters started from tests with
// Options.Executable set to the test binary do: it runs the node and exits.
// Otherwise it returns at once. Call it first in TestMain.
func ServeAsNode() {
	if len(os.Args) < 2 || os.Args[1] != "node" {
		return
	}
	cmd := nodecmd.NewCommand()
	cmd.SetArgs(os.Args[2:])
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
