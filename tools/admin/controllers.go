package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
	"github.com/sluice-log/sluice/tools/internal/cli"
)

// controllerCmd is `sluice cluster add-controller|remove-controller`,
// after kafka-metadata-quorum.sh's (KIP-853): AddRaftVoter and
// RemoveRaftVoter through any broker to the active controller.
type controllerCmd struct {
	common
	id       int32
	endpoint string // host:port of the new voter's controller listener
	dirID    string
}

func (c *controllerCmd) flags(cmd *cobra.Command, add bool) {
	c.register(cmd)
	cmd.Flags().Int32Var(&c.id, "controller-id", -1, "the controller's node id")
	cmd.Flags().StringVar(&c.dirID, "controller-directory-id", "", "the controller's directory id (directory.id of its meta.properties); checked when given")
	if add {
		cmd.Flags().StringVar(&c.endpoint, "controller-endpoint", "", "HOST:PORT of its controller listener; checked against the address it joined at when given")
	}
}

// NewAddControllerCommand returns `sluice cluster add-controller`.
func NewAddControllerCommand() *cobra.Command {
	var c controllerCmd
	cmd := &cobra.Command{
		Use:   "add-controller --controller-id N",
		Short: "Make an observer of the metadata quorum a voter (AddRaftVoter)",
		Long: `Add a controller to the metadata quorum's voters, like kafka-metadata-quorum.sh
add-controller (KIP-853). The node must run already and have joined as an observer:
a controller replacing one lost with its disk is formatted with
sluice init --no-initial-controllers (in a container:
SLUICE_SLUICE_FORMAT_NO_INITIAL_CONTROLLERS=true), so it replays the metadata log
without voting. The active controller waits until its log has caught up, then adds
it; the answer comes once the new voter set is committed.

Replacing controller N lost with its disk:
  sluice cluster remove-controller --controller-id N
  (start the replacement, same or new id, formatted without initial controllers)
  sluice cluster add-controller --controller-id N
  sluice quorum describe --replication   # N is a Follower, its lag 0`,
		Example: "  sluice cluster add-controller --controller-id 3\n  sluice cluster add-controller --controller-id 6 --controller-endpoint sluice-6:9093",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.add(cmd.Context(), cmd.OutOrStdout())
		},
	}
	c.flags(cmd, true)
	return cmd
}

// NewRemoveControllerCommand returns `sluice cluster remove-controller`.
func NewRemoveControllerCommand() *cobra.Command {
	var c controllerCmd
	cmd := &cobra.Command{
		Use:   "remove-controller --controller-id N",
		Short: "Remove a voter from the metadata quorum (RemoveRaftVoter)",
		Long: `Remove a controller from the metadata quorum's voters, like kafka-metadata-quorum.sh
remove-controller (KIP-853): for a controller lost with its disk, before its
replacement starts. The quorum then counts its majority over the voters left, so
keep a majority of them running. A voter that lost its log must not come back as
the same voter (it would count for entries it no longer has): a node joining with
an empty log under the id of a current voter is refused until it is removed.`,
		Example: "  sluice cluster remove-controller --controller-id 3",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.remove(cmd.Context(), cmd.OutOrStdout())
		},
	}
	c.flags(cmd, false)
	return cmd
}

func (c *controllerCmd) check() ([16]byte, error) {
	var dir [16]byte
	if c.id < 0 {
		return dir, errors.New("--controller-id is required")
	}
	if c.dirID != "" {
		u, err := quorum.ParseUUID(c.dirID)
		if err != nil {
			return dir, fmt.Errorf("--controller-directory-id %q: %v", c.dirID, err)
		}
		dir = u
	}
	return dir, nil
}

func (c *controllerCmd) add(ctx context.Context, w io.Writer) error {
	dir, err := c.check()
	if err != nil {
		return err
	}
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.VoterID, req.VoterDirectoryID, req.AckWhenCommitted = c.id, dir, true
	req.TimeoutMillis = int32(min(c.timeout.Milliseconds(), 1<<31-1))
	if c.endpoint != "" {
		host, port, err := net.SplitHostPort(c.endpoint)
		p, perr := strconv.ParseUint(port, 10, 16)
		if err != nil || perr != nil {
			return fmt.Errorf("--controller-endpoint %q is not HOST:PORT", c.endpoint)
		}
		l := kmsg.NewAddRaftVoterRequestListener()
		l.Name, l.Host, l.Port = "CONTROLLER", host, uint16(p)
		req.Listeners = append(req.Listeners, l)
	}
	return c.with(ctx, func(s session) error {
		resp, err := req.RequestWith(s.ctx, s.cl)
		if err != nil {
			return c.unreachable(err)
		}
		if err := voterErr("add controller", c.id, resp.ErrorCode, resp.ErrorMessage); err != nil {
			return err
		}
		fmt.Fprintf(w, "Added controller %d to the metadata quorum's voters.\n", c.id)
		return nil
	})
}

func (c *controllerCmd) remove(ctx context.Context, w io.Writer) error {
	dir, err := c.check()
	if err != nil {
		return err
	}
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.VoterID, req.VoterDirectoryID = c.id, dir
	return c.with(ctx, func(s session) error {
		resp, err := req.RequestWith(s.ctx, s.cl)
		if err != nil {
			return c.unreachable(err)
		}
		if err := voterErr("remove controller", c.id, resp.ErrorCode, resp.ErrorMessage); err != nil {
			return err
		}
		fmt.Fprintf(w, "Removed controller %d from the metadata quorum's voters.\n", c.id)
		return nil
	})
}

func voterErr(what string, id int32, code int16, msg *string) error {
	if err := kerr.ErrorForCode(code); err != nil {
		return fmt.Errorf("%w: %s %d: %v%s", cli.ErrProblem, what, id, err, detail(deref(msg)))
	}
	return nil
}
