// Package tune is `sluice tune`: host settings that matter to a Sluice
// node. Today one subcommand, `sluice tune writeback`, which shows the
// page-cache writeback sysctls (vm.dirty_*) next to a recommended profile
// and, as root with --apply, sets them after saving the current values to
// a file that --restore puts back. The reasoning behind the profile and
// the warnings is in node/writeback's package doc.
//
// Every file it reads or writes is under --proc (default /proc), so tests
// run it against a temporary tree and never change the machine.
package tune

import (
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sluice-log/sluice/node/writeback"
)

// NewCommand returns `sluice tune` with its subcommands.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "Show and set host settings for a Sluice node (page-cache writeback)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newWritebackCommand())
	return cmd
}

func newWritebackCommand() *cobra.Command {
	var (
		profile, procRoot, save, restore string
		apply                            bool
	)
	cmd := &cobra.Command{
		Use:   "writeback",
		Short: "Show the vm.dirty_* sysctls next to a recommended profile; set them with --apply (root)",
		Long: `writeback prints the page-cache writeback sysctls (vm.dirty_*) of this machine
next to the values of a profile and warns about settings that make long
writeback stalls likely (node/writeback explains the rules).

With --apply (as root) it first saves the current values to --save (a new
file: it never overwrites one), then writes the profile's values. --restore
FILE writes the values of a file saved that way back. Neither survives a
reboot: for that, put the printed sysctl.d lines in /etc/sysctl.d/.`,
		Example: `  sluice tune writeback --profile streaming
  sudo sluice tune writeback --profile streaming --apply --save /root/writeback.before.json
  sudo sluice tune writeback --restore /root/writeback.before.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if restore != "" {
				if apply {
					return errors.New("tune writeback: give --apply or --restore, not both")
				}
				return runRestore(out, procRoot, restore)
			}
			return runWriteback(out, procRoot, profile, apply, save)
		},
	}
	f := cmd.Flags()
	f.StringVar(&profile, "profile", "streaming", fmt.Sprintf("the profile to compare with or apply %v", writeback.Profiles))
	f.BoolVar(&apply, "apply", false, "set the profile's values (needs root), after saving the current ones to --save")
	f.StringVar(&save, "save", "sluice-writeback.saved.json", "where --apply saves the current values (must not exist)")
	f.StringVar(&restore, "restore", "", "write back the values saved in this file (needs root)")
	f.StringVar(&procRoot, "proc", "/proc", "the proc root to read and write (tests point it at a fake tree)")
	return cmd
}

// needRoot refuses to write the real /proc without root, with a clear error
// instead of a permission failure half way through.
func needRoot(procRoot string, euid int) error {
	if procRoot == "/proc" && euid != 0 {
		return errors.New("tune writeback: setting vm.dirty_* needs root: run it with sudo (nothing was changed)")
	}
	return nil
}

func runWriteback(out io.Writer, procRoot, profile string, apply bool, save string) error {
	cur, err := writeback.Read(procRoot)
	if err != nil {
		return err
	}
	mem, err := writeback.ReadMemory(procRoot)
	if err != nil {
		return err
	}
	rec, err := writeback.Recommend(profile, mem.Total)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "memory: %d MiB (MemTotal); dirty now: %d MiB, under writeback: %d MiB\n\n", mem.Total>>20, mem.Dirty>>20, mem.Writeback>>20)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "sysctl\tcurrent\t%s\n", profile)
	for _, name := range writeback.Names {
		mark := ""
		if cur[name] != rec[name] {
			mark = "  *"
		}
		fmt.Fprintf(tw, "vm.%s\t%d\t%d%s\n", name, cur[name], rec[name], mark)
	}
	ct, rt := writeback.Effective(cur, mem.Total), writeback.Effective(rec, mem.Total)
	fmt.Fprintf(tw, "(background threshold)\t%d MiB\t%d MiB\n", ct.Background>>20, rt.Background>>20)
	fmt.Fprintf(tw, "(throttle threshold)\t%d MiB\t%d MiB\n", ct.Throttle>>20, rt.Throttle>>20)
	if err := tw.Flush(); err != nil {
		return err
	}
	warns := writeback.Check(cur, mem.Total)
	if len(warns) == 0 {
		fmt.Fprintln(out, "\nThe current settings break none of the stall rules.")
	}
	for _, w := range warns {
		fmt.Fprintln(out, "\nwarning:", w)
	}
	if !apply {
		fmt.Fprintf(out, "\nTo apply (saving the current values first):\n  sudo sluice tune writeback --profile %s --apply --save FILE\n", profile)
		fmt.Fprintln(out, "To keep them across reboots, /etc/sysctl.d/60-sluice.conf:")
		for _, name := range writeback.Names {
			if rec[name] != 0 {
				fmt.Fprintf(out, "  vm.%s = %d\n", name, rec[name])
			}
		}
		return nil
	}
	if err := needRoot(procRoot, os.Geteuid()); err != nil {
		return err
	}
	if err := writeback.Save(save, cur); err != nil {
		return err
	}
	if err := writeback.Apply(procRoot, rec); err != nil {
		return fmt.Errorf("%w (the previous values are in %s: sluice tune writeback --restore %s)", err, save, save)
	}
	fmt.Fprintf(out, "\nApplied profile %s; the previous values are in %s (undo: sluice tune writeback --restore %s).\n", profile, save, save)
	return nil
}

func runRestore(out io.Writer, procRoot, file string) error {
	s, err := writeback.Load(file)
	if err != nil {
		return err
	}
	if err := needRoot(procRoot, os.Geteuid()); err != nil {
		return err
	}
	if err := writeback.Apply(procRoot, s); err != nil {
		return err
	}
	fmt.Fprintf(out, "Restored the vm.dirty_* values saved in %s.\n", file)
	return nil
}
