package initcmd

import (
	"errors"
	"fmt"

	"github.com/sluice-log/sluice/node/meta"
	"github.com/sluice-log/sluice/node/sasl"
	"github.com/sluice-log/sluice/quorum"
	"github.com/spf13/cobra"
)

// NewCommand returns `sluice init` (format a node directory) with its
// `random-uuid` subcommand.
func NewCommand() *cobra.Command {
	var (
		dir, clusterID, controllers, controllerAddr string
		nodeID                                      int32
		standalone, ignoreFormatted, noInitial      bool
		addScram                                    []string
	)
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Format a node directory (meta.properties) for a new or existing cluster",
		Long: `init writes meta.properties into --dir: the cluster id, the node id, a new
directory id and the initial controllers (the Raft voters that bootstrap the
metadata quorum). Every node of a cluster is formatted with the same cluster id
and the same --initial-controllers. It refuses a directory that is already
formatted, unless --ignore-formatted, which leaves such a directory as it is.

--no-initial-controllers (Kafka's flag, KIP-853) formats a controller that
replaces one lost with its disk: it never bootstraps a quorum, joins the
running one (controller.quorum.voters) as an observer and becomes a voter
when added: sluice cluster remove-controller --controller-id N (the lost one,
first), start the replacement, sluice cluster add-controller --controller-id N.

--add-scram MECHANISM=[name=USER,password=PASSWORD] (repeatable; also
iterations=N, or salt= and saltedpassword= in base64, as kafka-storage.sh
format takes them) bootstraps SCRAM credentials: they are written salted
(never the password) into bootstrap.json, and the first active controller
puts them in the metadata with the cluster id. Give every controller the
same ones.`,
		Example: `  id=$(sluice init random-uuid)
  sluice init --dir /var/lib/sluice --cluster-id $id --node-id 1 \
      --initial-controllers 1@n1:9093,2@n2:9093,3@n3:9093
  sluice init --dir ./data --cluster-id $id --node-id 1 --standalone \
      --add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" || clusterID == "" || !cmd.Flags().Changed("node-id") {
				return errors.New("init: --dir, --cluster-id and --node-id are required (make a cluster id with `sluice init random-uuid`)")
			}
			if n := btoi(standalone) + btoi(controllers != "") + btoi(noInitial); n != 1 {
				return errors.New("init: give exactly one of --initial-controllers, --standalone and --no-initial-controllers")
			}
			m := meta.Meta{ClusterID: clusterID, NodeID: nodeID}
			switch {
			case noInitial:
				// A replacement controller: joins, never bootstraps.
			case standalone:
				m.InitialControllers = []quorum.Voter{{ID: nodeID, Addr: controllerAddr}}
			default:
				vs, err := meta.ParseControllers(controllers)
				if err != nil {
					return err
				}
				m.InitialControllers = vs
			}
			scram, err := bootstrapScram(addScram)
			if err != nil {
				return err
			}
			m, err = meta.Format(dir, m)
			if errors.Is(err, meta.ErrFormatted) && ignoreFormatted {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is already formatted; left as is\n", dir)
				return nil
			}
			if err != nil {
				return err
			}
			if len(scram) > 0 {
				if err := meta.WriteBootstrap(dir, scram); err != nil {
					return fmt.Errorf("init: %s written, but not the SCRAM credentials: %w", dir, err)
				}
			}
			role := "broker (joins as a non-voter)"
			switch {
			case noInitial:
				role = "no initial controllers (joins the running quorum as an observer: then `sluice cluster add-controller`)"
			case m.IsController():
				role = "controller (Raft voter)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "formatted %s: cluster %s, node %d, %s, directory %s\n",
				dir, m.ClusterID, m.NodeID, role, m.DirectoryID)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "node directory to format")
	f.StringVarP(&clusterID, "cluster-id", "t", "", "cluster id (sluice init random-uuid)")
	f.Int32Var(&nodeID, "node-id", -1, "this node's id")
	f.StringVar(&controllers, "initial-controllers", "", "initial controllers: id@host:port,...")
	f.BoolVar(&standalone, "standalone", false, "this node is the only initial controller")
	f.BoolVarP(&noInitial, "no-initial-controllers", "N", false, "format without initial controllers (a replacement controller): the node joins the running quorum (controller.quorum.voters) as an observer and never bootstraps one")
	f.StringVar(&controllerAddr, "controller-addr", "localhost:9093", "with --standalone: this node's controller address")
	f.BoolVarP(&ignoreFormatted, "ignore-formatted", "g", false, "succeed without change if the directory is already formatted")
	f.StringArrayVarP(&addScram, "add-scram", "S", nil, "bootstrap a SCRAM credential: 'SCRAM-SHA-256=[name=admin,password=admin-secret]' (repeatable)")
	cmd.AddCommand(&cobra.Command{
		Use:   "random-uuid",
		Short: "Print a new random cluster id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), quorum.NewUUID())
			return nil
		},
	})
	return cmd
}

// bootstrapScram turns --add-scram values into credential records.
func bootstrapScram(vals []string) ([]quorum.ScramCredentialRecord, error) {
	var out []quorum.ScramCredentialRecord
	for _, v := range vals {
		specs, err := sasl.ParseScramSpecs(v)
		if err != nil {
			return nil, fmt.Errorf("init: --add-scram %q: %w", v, err)
		}
		for _, sp := range specs {
			name := sp.Attrs["name"]
			if name == "" {
				return nil, fmt.Errorf("init: --add-scram %q: name=USER is required", v)
			}
			c, err := sp.Credential()
			if err != nil {
				return nil, fmt.Errorf("init: --add-scram for %s: %w", name, err)
			}
			out = append(out, quorum.ScramCredentialRecord{User: name, Mechanism: sp.Mechanism, Credential: quorum.ScramCredential{
				Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: int32(c.Iterations)}})
		}
	}
	return out, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
