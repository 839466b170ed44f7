package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnsCmd is `sluice transactions`, after kafka-transactions.sh: list,
// describe, describe-producers, abort and find-hanging, with Kafka's
// flags and Kafka's columns (each padded to its widest value, then a
// tab, as Kafka's prettyPrintTable prints them).
type txnsCmd struct {
	common
	txnID            string
	topic            string
	partition        int32
	producerID       int64
	producerEpoch    int16
	coordinatorEpoch int32
	startOffset      int64
	brokerID         int32
	maxTimeout       int   // find-hanging --max-transaction-timeout, minutes
	durationFilter   int64 // list --duration-filter, ms
	idPattern        string
	set              func(flag string) bool // whether a flag was given
	now              func() time.Time
}

// NewTransactionsCommand returns `sluice transactions`.
func NewTransactionsCommand() *cobra.Command {
	c := txnsCmd{now: time.Now}
	root := &cobra.Command{
		Use:   "transactions",
		Short: "List, describe and abort transactions, find hanging ones (like kafka-transactions.sh)",
		Long: `transactions analyzes the transactional state of producers in the cluster,
as kafka-transactions.sh does: it can be used to detect and recover from
hanging transactions (an open transaction the coordinator no longer tracks,
which keeps a partition's last stable offset, and so every read_committed
consumer of it, from moving).

  list                 transactional ids, their coordinators, producer ids and states
  describe             one transactional id's state, timeout, start and partitions
  describe-producers   the active producers of a partition (on its leader or --broker-id)
  abort                abort an open transaction of a partition (WriteTxnMarkers,
                       needs CLUSTER_ACTION): by --start-offset, or by
                       --producer-id, --producer-epoch and --coordinator-epoch
  find-hanging         open transactions older than --max-transaction-timeout minutes
                       that their coordinator does not know (exit status 2 if any)`,
	}
	c.register(root)
	bind := func(run func(*txnsCmd, context.Context, streams) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			c.set = func(name string) bool { return cmd.Flags().Changed(name) }
			return run(&c, cmd.Context(), streamsOf(cmd))
		}
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "List transactions: TransactionalId Coordinator ProducerId TransactionState",
		Example: `  sluice transactions list
  sluice transactions list --duration-filter 60000          # open longer than a minute
  sluice transactions list --transactional-id-pattern 'orders-.*'`,
		Args: cobra.NoArgs,
		RunE: bind((*txnsCmd).list),
	}
	list.Flags().Int64Var(&c.durationFilter, "duration-filter", -1, "only transactions running longer than this many milliseconds (KIP-994)")
	list.Flags().StringVar(&c.idPattern, "transactional-id-pattern", "", "only transactional ids matching this RE2 regular expression (KIP-1152)")

	describe := &cobra.Command{
		Use:     "describe",
		Short:   "Describe the state of an active transactional-id",
		Example: "  sluice transactions describe --transactional-id orders-app-0",
		Args:    cobra.NoArgs,
		RunE:    bind((*txnsCmd).describe),
	}
	describe.Flags().StringVar(&c.txnID, "transactional-id", "", "transactional id (required)")

	producers := &cobra.Command{
		Use:     "describe-producers",
		Short:   "Describe the states of active producers for a topic partition",
		Example: "  sluice transactions describe-producers --topic orders --partition 0\n  sluice transactions describe-producers --topic orders --partition 0 --broker-id 2",
		Args:    cobra.NoArgs,
		RunE:    bind((*txnsCmd).describeProducers),
	}
	producers.Flags().Int32Var(&c.brokerID, "broker-id", -1, "describe the producer state on this replica (default: the leader)")
	txnPartitionFlags(producers, &c)

	abort := &cobra.Command{
		Use:   "abort",
		Short: "Abort a hanging transaction (requires administrative privileges: CLUSTER_ACTION)",
		Example: `  sluice transactions abort --topic orders --partition 0 --start-offset 4711
  sluice transactions abort --topic orders --partition 0 --producer-id 12 --producer-epoch 3 --coordinator-epoch 5`,
		Args: cobra.NoArgs,
		RunE: bind((*txnsCmd).abort),
	}
	txnPartitionFlags(abort, &c)
	abort.Flags().Int64Var(&c.startOffset, "start-offset", -1, "start offset of the transaction to abort (brokers on versions 3.0 and above)")
	abort.Flags().Int64Var(&c.producerID, "producer-id", -1, "producer id (with --producer-epoch and --coordinator-epoch, instead of --start-offset)")
	abort.Flags().Int16Var(&c.producerEpoch, "producer-epoch", -1, "producer epoch")
	abort.Flags().Int32Var(&c.coordinatorEpoch, "coordinator-epoch", -1, "coordinator epoch")

	hanging := &cobra.Command{
		Use:   "find-hanging",
		Short: "Find hanging transactions (exit status 2 if any)",
		Example: `  sluice transactions find-hanging --broker-id 1
  sluice transactions find-hanging --topic orders --max-transaction-timeout 5`,
		Args: cobra.NoArgs,
		RunE: bind((*txnsCmd).findHanging),
	}
	hf := hanging.Flags()
	hf.Int32Var(&c.brokerID, "broker-id", -1, "broker id to search for hanging transactions")
	hf.IntVar(&c.maxTimeout, "max-transaction-timeout", 15, "maximum transaction timeout in minutes to limit the scope of the search")
	hf.StringVar(&c.topic, "topic", "", "topic name to limit search to")
	hf.Int32Var(&c.partition, "partition", -1, "partition number")

	root.AddCommand(list, describe, producers, abort, hanging)
	return root
}

// txnPartitionFlags are --topic and --partition, both required.
func txnPartitionFlags(cmd *cobra.Command, c *txnsCmd) {
	cmd.Flags().StringVar(&c.topic, "topic", "", "topic name (required)")
	cmd.Flags().Int32Var(&c.partition, "partition", -1, "partition number (required)")
}

// prettyTable writes rows under headers as kafka-transactions.sh does:
// every cell padded to its column's widest value, each followed by a tab.
func prettyTable(w io.Writer, headers []string, rows [][]string) {
	width := make([]int, len(headers))
	for i, h := range headers {
		width[i] = len(h)
	}
	for _, r := range rows {
		for i := range headers {
			width[i] = max(width[i], len(r[i]))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", width[i]-len(c)))
			b.WriteByte('\t')
		}
		fmt.Fprintln(w, b.String())
	}
	line(headers)
	for _, r := range rows {
		line(r)
	}
}

// txnErr says what to do about an error of the transaction APIs.
func (c *txnsCmd) txnErr(err error) error {
	var ke *kerr.Error
	switch {
	case errors.Is(err, kerr.UnsupportedVersion), errors.Is(err, kerr.TransactionalIDAuthorizationFailed) && !strings.Contains(err.Error(), "DESCRIBE"):
		return fmt.Errorf("%w (does the cluster serve transactions? it needs a node version with the transaction coordinator)", err)
	case errors.Is(err, kerr.ClusterAuthorizationFailed):
		return fmt.Errorf("%w (abort writes markers: the principal needs CLUSTER_ACTION on the cluster)", err)
	case errors.As(err, &ke):
		return err
	}
	var se *kadm.ShardErrors
	if errors.As(err, &se) {
		return err
	}
	return c.unreachable(err)
}

// needPartition checks --topic and --partition.
func (c *txnsCmd) needPartition() error {
	switch {
	case c.topic == "":
		return errors.New("missing required argument --topic")
	case !c.set("partition"):
		return errors.New("missing required argument --partition")
	case c.partition < 0:
		return fmt.Errorf("--partition %d: want a partition number ≥ 0", c.partition)
	}
	return nil
}

// ListedTxnRow is one transaction of `transactions list --format json`.
type ListedTxnRow struct {
	TransactionalID string `json:"transactional_id"`
	Coordinator     int32  `json:"coordinator"`
	ProducerID      int64  `json:"producer_id"`
	State           string `json:"state"`
}

var listHeaders = []string{"TransactionalId", "Coordinator", "ProducerId", "TransactionState"}

func (c *txnsCmd) list(ctx context.Context, std streams) error {
	return c.with(ctx, func(s session) error {
		req := kmsg.NewPtrListTransactionsRequest()
		req.DurationFilterMillis = c.durationFilter
		if c.idPattern != "" {
			req.TransactionalIDPattern = kmsg.StringPtr(c.idPattern)
		}
		// Before ListTransactions v2 (KIP-1152) the pattern is not on the
		// wire: filter here instead (a full match, as Kafka's matches()).
		var local *regexp.Regexp
		if c.idPattern != "" {
			var err error
			if local, err = regexp.Compile("^(?:" + c.idPattern + ")$"); err != nil {
				return fmt.Errorf("--transactional-id-pattern %q: %w", c.idPattern, err)
			}
		}
		var rows []ListedTxnRow
		var errs []error
		for _, sh := range s.cl.RequestSharded(s.ctx, req) {
			if sh.Err != nil {
				errs = append(errs, fmt.Errorf("broker %d: %w", sh.Meta.NodeID, sh.Err))
				continue
			}
			resp := sh.Resp.(*kmsg.ListTransactionsResponse)
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				errs = append(errs, fmt.Errorf("broker %d: %w", sh.Meta.NodeID, err))
				continue
			}
			for _, t := range resp.TransactionStates {
				if local != nil && resp.GetVersion() < 2 && !local.MatchString(t.TransactionalID) {
					continue
				}
				rows = append(rows, ListedTxnRow{TransactionalID: t.TransactionalID, Coordinator: sh.Meta.NodeID, ProducerID: t.ProducerID, State: t.TransactionState})
			}
		}
		if len(errs) > 0 && len(rows) == 0 {
			return c.txnErr(fmt.Errorf("failed to list transactions: %w", errors.Join(errs...)))
		}
		slices.SortFunc(rows, func(a, b ListedTxnRow) int { return strings.Compare(a.TransactionalID, b.TransactionalID) })
		if rows == nil {
			rows = []ListedTxnRow{}
		}
		err := c.emit(std.out, rows, func() { prettyTable(std.out, listHeaders, listRows(rows)) })
		if len(errs) > 0 {
			return fmt.Errorf("some brokers did not answer (their transactions are missing above): %w", errors.Join(errs...))
		}
		return err
	})
}

func listRows(rows []ListedTxnRow) [][]string {
	var out [][]string
	for _, r := range rows {
		out = append(out, []string{r.TransactionalID, strconv.Itoa(int(r.Coordinator)), strconv.FormatInt(r.ProducerID, 10), r.State})
	}
	return out
}

// DescribedTxnRow is `transactions describe --format json`.
type DescribedTxnRow struct {
	Coordinator     int32    `json:"coordinator"`
	TransactionalID string   `json:"transactional_id"`
	ProducerID      int64    `json:"producer_id"`
	ProducerEpoch   int16    `json:"producer_epoch"`
	State           string   `json:"state"`
	TimeoutMs       int32    `json:"transaction_timeout_ms"`
	StartTimeMs     *int64   `json:"current_transaction_start_time_ms"` // nil: none
	DurationMs      *int64   `json:"transaction_duration_ms"`
	Partitions      []string `json:"topic_partitions"` // "topic-partition", as Kafka prints them
}

var describeHeaders = []string{"CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
	"TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"}

// describedRow turns kadm's description into the row (now: for the
// duration).
func describedRow(d kadm.DescribedTransaction, now time.Time) DescribedTxnRow {
	r := DescribedTxnRow{Coordinator: d.Coordinator, TransactionalID: d.TxnID, ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch,
		State: d.State, TimeoutMs: d.TimeoutMillis, Partitions: []string{}}
	if d.StartTimestamp >= 0 {
		start, dur := d.StartTimestamp, now.UnixMilli()-d.StartTimestamp
		r.StartTimeMs, r.DurationMs = &start, &dur
	}
	for _, t := range d.Topics.Sorted() {
		for _, p := range t.Partitions {
			r.Partitions = append(r.Partitions, fmt.Sprintf("%s-%d", t.Topic, p))
		}
	}
	return r
}

func (r DescribedTxnRow) cells() []string {
	none := func(v *int64) string {
		if v == nil {
			return "None"
		}
		return strconv.FormatInt(*v, 10)
	}
	return []string{strconv.Itoa(int(r.Coordinator)), r.TransactionalID, strconv.FormatInt(r.ProducerID, 10), strconv.Itoa(int(r.ProducerEpoch)),
		r.State, strconv.Itoa(int(r.TimeoutMs)), none(r.StartTimeMs), none(r.DurationMs), strings.Join(r.Partitions, ",")}
}

func (c *txnsCmd) describe(ctx context.Context, std streams) error {
	if c.txnID == "" {
		return errors.New("missing required argument --transactional-id")
	}
	return c.with(ctx, func(s session) error {
		ds, err := s.adm.DescribeTransactions(s.ctx, c.txnID)
		if err == nil {
			var d kadm.DescribedTransaction
			d, err = ds.On(c.txnID, nil)
			if err == nil && d.Err != nil {
				err = d.Err
			}
			if err == nil {
				row := describedRow(d, c.now())
				return c.emit(std.out, row, func() { prettyTable(std.out, describeHeaders, [][]string{row.cells()}) })
			}
		}
		return c.txnErr(fmt.Errorf("failed to describe transaction state of transactional-id `%s`: %w", c.txnID, err))
	})
}
