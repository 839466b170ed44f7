package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-log/sluice/tools/cluster"
)

// Options of a bench run (the flags of `sluice bench`).
type Options struct {
	Bootstrap    string // an existing cluster; "" starts one
	Nodes        int
	Dir          string // the local cluster's directory; "" a temp dir
	BasePort     int
	Keep         bool // leave the local cluster running
	CellDuration time.Duration
	Quick        bool
	Dims         Dimensions // filters (Quick) or the axes (full matrix)
	Linger       time.Duration
	Rate         float64 // MB/s of the fixed-load cells; 0: none
	Peer         string  // "" or "nats"
	NATSServer   string
	PeerBasePort int
	Out          string // directory for bench.csv, bench.json, bench.png
	Failover     int    // > 0: the failover bench instead (RunFailover)
}

// NewCommand returns `sluice bench`.
func NewCommand() *cobra.Command {
	var o Options
	var acks, durs, sizes, rfs, parts, batching []string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure throughput and latency over a matrix of acks, durability, record size, RF, partitions and batching",
		Long: `bench starts a local cluster (or uses --bootstrap-servers), runs each cell of the
matrix for --cell-duration with a franz-go producer and a consumer on the same
topic, and prints each cell as kafka-producer-perf-test does, plus produce and
end-to-end p50/p99/p99.9. A cell the cluster refuses is reported and skipped.
At the end: one table, and bench.csv, bench.json and bench.png in --out.`,
		Example: `  sluice bench --quick                      # 8 key cells + the fixed-load cell, 10s each
  sluice bench --quick --rf 1 --peer nats   # RF=1 cells, side by side with NATS JetStream
  sluice bench --acks all --sizes 1KiB      # the full matrix, narrowed
  sluice bench --bootstrap-servers 127.0.0.1:9192 --quick
  sluice bench --failover 30 --rate 20      # leader kills and clean stops, against the baseline`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Dims.Acks, err = parseAxis("acks", acks, []string{"0", "1", "all"}); err != nil {
				return err
			}
			if o.Dims.Durability, err = parseAxis("durability", durs, []string{DurPageCache, DurSync, DurFlush1}); err != nil {
				return err
			}
			if o.Dims.Batching, err = parseAxis("batching", batching, []string{BatchDefault, BatchLinger}); err != nil {
				return err
			}
			if o.Dims.Sizes, err = parseInts("sizes", sizes); err != nil {
				return err
			}
			if o.Dims.RF, err = parseInts("rf", rfs); err != nil {
				return err
			}
			if o.Dims.Partitions, err = parseInts("partitions", parts); err != nil {
				return err
			}
			if o.Peer != "" && o.Peer != "nats" {
				return fmt.Errorf("--peer %s: the only peer is nats", o.Peer)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if o.Failover > 0 {
				_, err = RunFailover(ctx, cmd.OutOrStdout(), FailoverOptions{Faults: o.Failover, RateMBps: o.Rate, BasePort: o.BasePort})
				return err
			}
			_, err = Run(ctx, cmd.OutOrStdout(), o)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Bootstrap, "bootstrap-servers", "", "use this running cluster instead of starting one")
	f.IntVar(&o.Nodes, "nodes", 3, "nodes of the local cluster")
	f.StringVar(&o.Dir, "dir", "", "directory of the local cluster (default: a temp dir, removed after)")
	f.IntVar(&o.BasePort, "base-port", 19092, "Kafka port base of the local cluster (node i listens on it + 100*i)")
	f.BoolVar(&o.Keep, "keep", false, "leave the local cluster running")
	f.DurationVar(&o.CellDuration, "cell-duration", 10*time.Second, "how long each cell produces")
	f.BoolVar(&o.Quick, "quick", false, "only the key cells (acks=all, 6 partitions; page-cache 100B and 1KiB, sync and flush.messages=1 at 1KiB; RF 1 and 3)")
	f.StringSliceVar(&acks, "acks", nil, "only these acks (0,1,all)")
	f.StringSliceVar(&durs, "durability", nil, "only these durabilities (page-cache,sync,flush1)")
	f.StringSliceVar(&sizes, "sizes", nil, "only these record sizes (100,1KiB)")
	f.StringSliceVar(&rfs, "rf", nil, "only these replication factors (1,3)")
	f.StringSliceVar(&parts, "partitions", nil, "only these partition counts (1,6)")
	f.StringSliceVar(&batching, "batching", nil, "only these producer batchings (default,linger)")
	f.DurationVar(&o.Linger, "linger", 0, "producer linger of the 'linger' batching cells (kgo's default is 10ms)")
	f.Float64Var(&o.Rate, "rate", 20, "offered load in MB/s of the fixed-load end-to-end cells (0: none)")
	f.StringVar(&o.Peer, "peer", "", "also measure a peer system's closest cells: nats (JetStream, 3 nodes, R3, file storage)")
	f.StringVar(&o.NATSServer, "nats-server", "", "nats-server binary (default: PATH, then bin/, else go install "+NATSServerVersion+")")
	f.IntVar(&o.PeerBasePort, "peer-base-port", 14222, "client port of the peer's first node")
	f.StringVar(&o.Out, "out", "bench-out", "directory for bench.csv, bench.json and bench.png")
	f.IntVar(&o.Failover, "failover", 0, "instead of the matrix: N SIGKILLs and N SIGTERMs of a partition leader under a steady acks=all load (--rate MB/s), with today's failure detection and controlled shutdown and without them (the baseline), reporting time to writable and failed sends")
	return cmd
}

// Plan is the cells a run measures, Sluice's and the peer's.
func Plan(o Options) (cells, peer []Cell) {
	if o.Quick {
		cells = o.Dims.Filter(QuickCells())
	} else {
		d := FullDimensions()
		pick := func(f, all []string) []string {
			if len(f) > 0 {
				return f
			}
			return all
		}
		pickInt := func(f, all []int) []int {
			if len(f) > 0 {
				return f
			}
			return all
		}
		d = Dimensions{Acks: pick(o.Dims.Acks, d.Acks), Durability: pick(o.Dims.Durability, d.Durability),
			Sizes: pickInt(o.Dims.Sizes, d.Sizes), RF: pickInt(o.Dims.RF, d.RF),
			Partitions: pickInt(o.Dims.Partitions, d.Partitions), Batching: pick(o.Dims.Batching, d.Batching)}
		cells = d.Cells()
	}
	if o.Rate > 0 {
		rfs := o.Dims.RF
		if len(rfs) == 0 {
			rfs = []int{1, 3}
		}
		cells = append(cells, RateCells(o.Rate, rfs)...)
	}
	if o.Peer != "" {
		peer = PeerCells(cells)
		// Cells of one sync setting together: it is server-wide.
		slices.SortStableFunc(peer, func(a, b Cell) int { return strings.Compare(a.Durability, b.Durability) })
	}
	return cells, peer
}

// Run runs the bench and writes its outputs; progress goes to w.
func Run(ctx context.Context, w io.Writer, o Options) (*Report, error) {
	cells, peerCells := Plan(o)
	if len(cells) == 0 {
		return nil, fmt.Errorf("the filters leave no cell to run")
	}
	rep := &Report{Started: time.Now().UTC().Format(time.RFC3339), CellSeconds: o.CellDuration.Seconds(), Nodes: o.Nodes,
		Machine: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())}
	total := len(cells) + len(peerCells)
	fmt.Fprintf(w, "sluice bench: %d cells", len(cells))
	if len(peerCells) > 0 {
		fmt.Fprintf(w, " + %d %s cells", len(peerCells), o.Peer)
	}
	fmt.Fprintf(w, ", %v each: about %v\n", o.CellDuration, estimate(total, o.CellDuration).Round(time.Second))

	seeds, stopCluster, err := startCluster(ctx, w, o)
	if err != nil {
		return nil, err
	}
	if o.Bootstrap != "" {
		rep.Nodes = len(seeds) // the bootstrap servers given: a lower bound
	}
	k := &KafkaTarget{Seeds: seeds, Linger: o.Linger, Prefix: "sluice-bench"}
	for i, c := range cells {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(w, "[%d/%d] sluice %s (about %v left)\n", i+1, total, c.Name(), estimate(total-i, o.CellDuration).Round(time.Second))
		r := k.Run(ctx, w, c, o.CellDuration)
		printResult(w, r)
		rep.Sluice = append(rep.Sluice, r)
	}
	stopCluster()
	if len(peerCells) > 0 && ctx.Err() == nil {
		if err := runPeer(ctx, w, o, rep, peerCells, len(cells), total); err != nil {
			fmt.Fprintf(w, "peer %s: %v\n", o.Peer, err)
		}
	}
	fmt.Fprintln(w)
	if err := WriteTable(w, rep); err != nil {
		return rep, err
	}
	return rep, writeOutputs(w, o.Out, rep)
}

func printResult(w io.Writer, r Result) {
	fmt.Fprintf(w, "  %s\n", PerfLine(r))
	if d := DetailLine(r); d != "" {
		fmt.Fprintf(w, "  %s\n", d)
	}
}

// startCluster starts the local cluster unless o.Bootstrap names one; the
// returned stop undoes it (and removes a temp dir).
func startCluster(ctx context.Context, w io.Writer, o Options) ([]string, func(), error) {
	if o.Bootstrap != "" {
		return strings.Split(o.Bootstrap, ","), func() {}, nil
	}
	dir, tmp := o.Dir, false
	if dir == "" {
		d, err := os.MkdirTemp("", "sluice-bench-")
		if err != nil {
			return nil, nil, err
		}
		dir, tmp = d, true
	}
	// Longer than `sluice cluster start`'s 90 s: a bench machine is busy.
	sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	fmt.Fprintf(w, "starting a %d-node local cluster in %s\n", o.Nodes, dir)
	l, err := cluster.Start(sctx, w, cluster.Options{Dir: dir, Nodes: o.Nodes, BasePort: o.BasePort})
	stop := func() {
		if o.Keep {
			fmt.Fprintf(w, "the cluster keeps running: sluice cluster stop --dir %s\n", dir)
			return
		}
		if err := cluster.Stop(context.Background(), io.Discard, l); err != nil {
			fmt.Fprintf(w, "stop the cluster: %v\n", err)
		}
		if tmp {
			_ = os.RemoveAll(dir)
		}
	}
	if err != nil {
		stop()
		return nil, nil, err
	}
	return strings.Split(l.BootstrapServers, ","), stop, nil
}

func runPeer(ctx context.Context, w io.Writer, o Options, rep *Report, cells []Cell, done, total int) error {
	dir, err := os.MkdirTemp("", "sluice-bench-nats-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p := &NATSPeer{Bin: o.NATSServer, Dir: dir, BasePort: o.PeerBasePort, Nodes: 3}
	binDir := "bin"
	if exe, err := os.Executable(); err == nil {
		binDir = filepath.Dir(exe)
	}
	if err := p.Ensure(ctx, w, binDir); err != nil {
		return err
	}
	defer p.Stop()
	rep.PeerName, rep.PeerVersion = "nats", p.Version
	for i, c := range cells {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(w, "[%d/%d] nats %s (about %v left)\n", done+i+1, total, c.Name(), estimate(len(cells)-i, o.CellDuration).Round(time.Second))
		r := p.Run(ctx, w, c, o.CellDuration)
		printResult(w, r)
		rep.Peer = append(rep.Peer, r)
	}
	return nil
}

// writeOutputs writes bench.csv, bench.json and bench.png into dir.
func writeOutputs(w io.Writer, dir string, rep *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer, *Report) error
	}{{"bench.csv", WriteCSV}, {"bench.json", WriteJSON}} {
		path := filepath.Join(dir, f.name)
		fh, err := os.Create(path)
		if err != nil {
			return err
		}
		err = f.write(fh, rep)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		fmt.Fprintf(w, "wrote %s\n", path)
	}
	png := filepath.Join(dir, "bench.png")
	if err := WritePlot(png, rep); err != nil {
		fmt.Fprintf(w, "no picture: %v\n", err)
		return nil
	}
	fmt.Fprintf(w, "wrote %s\n", png)
	return nil
}
