package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/tools/internal/cli"
)

// `transactions describe-producers`, `abort` and `find-hanging`: the
// partitions' side of transactions (DescribeProducers, WriteTxnMarkers).

// ProducerRow is one active producer of `describe-producers --format
// json` (and of find-hanging's rows).
type ProducerRow struct {
	Topic            string `json:"topic"`
	Partition        int32  `json:"partition"`
	ProducerID       int64  `json:"producer_id"`
	ProducerEpoch    int16  `json:"producer_epoch"`
	CoordinatorEpoch int32  `json:"latest_coordinator_epoch"` // -1: none yet
	LastSequence     int32  `json:"last_sequence"`
	LastTimestamp    int64  `json:"last_timestamp"`
	// CurrentTxnStartOffset is the first offset of its open transaction
	// (-1: none).
	CurrentTxnStartOffset int64 `json:"current_transaction_start_offset"`
}

var producerHeaders = []string{"ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset"}

func (r ProducerRow) cells() []string {
	start := "None"
	if r.CurrentTxnStartOffset >= 0 {
		start = strconv.FormatInt(r.CurrentTxnStartOffset, 10)
	}
	return []string{strconv.FormatInt(r.ProducerID, 10), strconv.Itoa(int(r.ProducerEpoch)), strconv.Itoa(int(r.CoordinatorEpoch)),
		strconv.Itoa(int(r.LastSequence)), strconv.FormatInt(r.LastTimestamp, 10), start}
}

// partitionProducers is what DescribeProducers answered for one partition.
type partitionProducers struct {
	tp        TopicPartition
	producers []ProducerRow
	err       error
}

// TopicPartition names a partition in the JSON rows.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// describeProducers asks each partition's leader (broker < 0) or broker
// for its active producers.
func describeProducers(ctx context.Context, s session, broker int32, tps []TopicPartition) ([]partitionProducers, error) {
	var out []partitionProducers
	add := func(topic string, p int32, code int16, msg *string, ps []kmsg.DescribeProducersResponseTopicPartitionActiveProducer) {
		pp := partitionProducers{tp: TopicPartition{topic, p}, err: kerr.ErrorForCode(code)}
		if pp.err != nil && msg != nil && *msg != "" {
			pp.err = fmt.Errorf("%w: %s", pp.err, *msg)
		}
		for _, a := range ps {
			pp.producers = append(pp.producers, ProducerRow{Topic: topic, Partition: p, ProducerID: a.ProducerID, ProducerEpoch: int16(a.ProducerEpoch),
				CoordinatorEpoch: a.CoordinatorEpoch, LastSequence: a.LastSequence, LastTimestamp: a.LastTimestamp, CurrentTxnStartOffset: a.CurrentTxnStartOffset})
		}
		slices.SortFunc(pp.producers, func(a, b ProducerRow) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
		out = append(out, pp)
	}
	for batch := range slices.Chunk(tps, 500) {
		req := kmsg.NewPtrDescribeProducersRequest()
		byTopic := map[string]int{}
		for _, tp := range batch {
			i, ok := byTopic[tp.Topic]
			if !ok {
				i = len(req.Topics)
				byTopic[tp.Topic] = i
				rt := kmsg.NewDescribeProducersRequestTopic()
				rt.Topic = tp.Topic
				req.Topics = append(req.Topics, rt)
			}
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, tp.Partition)
		}
		var resps []*kmsg.DescribeProducersResponse
		if broker >= 0 {
			resp, err := req.RequestWith(ctx, s.cl.Broker(int(broker)))
			if err != nil {
				return nil, fmt.Errorf("failed to describe producers for %d partitions on broker %d: %w", len(batch), broker, err)
			}
			resps = append(resps, resp)
		} else {
			for _, sh := range s.cl.RequestSharded(ctx, req) {
				if sh.Err != nil {
					return nil, fmt.Errorf("failed to describe producers for %d partitions on broker %d: %w", len(batch), sh.Meta.NodeID, sh.Err)
				}
				resps = append(resps, sh.Resp.(*kmsg.DescribeProducersResponse))
			}
		}
		for _, resp := range resps {
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					add(t.Topic, p.Partition, p.ErrorCode, p.ErrorMessage, p.ActiveProducers)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b partitionProducers) int {
		return cmp.Or(cmp.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition))
	})
	return out, nil
}

func (c *txnsCmd) describeProducers(ctx context.Context, std streams) error {
	if err := c.needPartition(); err != nil {
		return err
	}
	tp := TopicPartition{c.topic, c.partition}
	on := "leader"
	if c.brokerID >= 0 {
		on = fmt.Sprintf("broker %d", c.brokerID)
	}
	return c.with(ctx, func(s session) error {
		pps, err := describeProducers(s.ctx, s, c.brokerID, []TopicPartition{tp})
		if err == nil && len(pps) != 1 {
			err = errors.New("no answer for the partition")
		}
		if err == nil {
			err = pps[0].err
		}
		if err != nil {
			return c.txnErr(fmt.Errorf("failed to describe producers for partition %s on %s: %w", tp, on, err))
		}
		rows := pps[0].producers
		if rows == nil {
			rows = []ProducerRow{}
		}
		return c.emit(std.out, rows, func() {
			var cells [][]string
			for _, r := range rows {
				cells = append(cells, r.cells())
			}
			prettyTable(std.out, producerHeaders, cells)
		})
	})
}

// AbortSpec is the transaction `transactions abort` aborts (printed with
// --format json).
type AbortSpec struct {
	Topic            string `json:"topic"`
	Partition        int32  `json:"partition"`
	ProducerID       int64  `json:"producer_id"`
	ProducerEpoch    int16  `json:"producer_epoch"`
	CoordinatorEpoch int32  `json:"coordinator_epoch"`
}

func (a AbortSpec) String() string {
	return fmt.Sprintf("AbortTransactionSpec(topicPartition=%s-%d, producerId=%d, producerEpoch=%d, coordinatorEpoch=%d)",
		a.Topic, a.Partition, a.ProducerID, a.ProducerEpoch, a.CoordinatorEpoch)
}

// abortFlags checks abort's flags: --start-offset, or all of
// --producer-id, --producer-epoch and --coordinator-epoch. It returns the
// spec of the second form (byOffset false).
func (c *txnsCmd) abortFlags() (spec AbortSpec, byOffset bool, err error) {
	if err := c.needPartition(); err != nil {
		return spec, false, err
	}
	spec = AbortSpec{Topic: c.topic, Partition: c.partition}
	switch {
	case c.set("start-offset") && c.set("producer-id"):
		return spec, false, errors.New("give the transaction by --start-offset or by --producer-id, --producer-epoch and --coordinator-epoch, not both")
	case c.set("start-offset"):
		if c.startOffset < 0 {
			return spec, false, fmt.Errorf("--start-offset %d: want an offset ≥ 0", c.startOffset)
		}
		return spec, true, nil
	case !c.set("producer-id"):
		return spec, false, errors.New("the transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)")
	case !c.set("producer-epoch"):
		return spec, false, errors.New("missing required argument --producer-epoch")
	case !c.set("coordinator-epoch"):
		return spec, false, errors.New("missing required argument --coordinator-epoch")
	}
	spec.ProducerID, spec.ProducerEpoch = c.producerID, c.producerEpoch
	// A transaction started by a new producer id that hangs before its
	// first marker shows coordinator epoch -1: 0 is at most any
	// coordinator's epoch (as Kafka's tool does).
	spec.CoordinatorEpoch = max(c.coordinatorEpoch, 0)
	return spec, false, nil
}

// abortSpecAt finds the open transaction of ps that starts at offset.
func abortSpecAt(spec AbortSpec, ps []ProducerRow, offset int64) (AbortSpec, error) {
	for _, p := range ps {
		if p.CurrentTxnStartOffset >= 0 && p.CurrentTxnStartOffset == offset {
			spec.ProducerID, spec.ProducerEpoch, spec.CoordinatorEpoch = p.ProducerID, p.ProducerEpoch, max(p.CoordinatorEpoch, 0)
			return spec, nil
		}
	}
	return spec, fmt.Errorf("could not find any open transactions starting at offset %d on partition %s-%d", offset, spec.Topic, spec.Partition)
}

func (c *txnsCmd) abort(ctx context.Context, std streams) error {
	spec, byOffset, err := c.abortFlags()
	if err != nil {
		return err
	}
	return c.with(ctx, func(s session) error {
		if byOffset {
			tp := TopicPartition{spec.Topic, spec.Partition}
			pps, err := describeProducers(s.ctx, s, -1, []TopicPartition{tp})
			if err == nil && len(pps) != 1 {
				err = errors.New("no answer for the partition")
			}
			if err == nil {
				err = pps[0].err
			}
			if err != nil {
				return c.txnErr(fmt.Errorf("failed to validate producer state for partition %s: %w", tp, err))
			}
			if spec, err = abortSpecAt(spec, pps[0].producers, c.startOffset); err != nil {
				return err
			}
		}
		set := kadm.TopicsSet{}
		set.Add(spec.Topic, spec.Partition)
		resp, err := s.adm.WriteTxnMarkers(s.ctx, kadm.TxnMarkers{ProducerID: spec.ProducerID, ProducerEpoch: spec.ProducerEpoch,
			Commit: false, CoordinatorEpoch: spec.CoordinatorEpoch, Topics: set})
		if err == nil {
			err = errors.New("no answer for the partition")
			resp.EachPartition(func(p kadm.TxnMarkersPartitionResponse) {
				if p.Topic == spec.Topic && p.Partition == spec.Partition {
					err = p.Err
				}
			})
		}
		if err != nil {
			if errors.Is(err, kerr.TransactionCoordinatorFenced) {
				err = fmt.Errorf("%w (the coordinator epoch is older than the partition's: the coordinator has written markers since; describe the producers again)", err)
			}
			return c.txnErr(fmt.Errorf("failed to abort transaction %s: %w", spec, err))
		}
		return c.emit(std.out, spec, func() {
			fmt.Fprintf(std.err, "Aborted the transaction of producer %d (epoch %d) on %s-%d.\n", spec.ProducerID, spec.ProducerEpoch, spec.Topic, spec.Partition)
		})
	})
}

// HangingRow is one hanging transaction of `find-hanging`.
type HangingRow struct {
	ProducerRow
	// DurationMin is how long ago its producer last wrote, in minutes.
	DurationMin int64 `json:"duration_min"`
}

var hangingHeaders = []string{"Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset", "LastTimestamp", "Duration(min)"}

func (r HangingRow) cells() []string {
	return []string{r.Topic, strconv.Itoa(int(r.Partition)), strconv.FormatInt(r.ProducerID, 10), strconv.Itoa(int(r.ProducerEpoch)),
		strconv.Itoa(int(r.CoordinatorEpoch)), strconv.FormatInt(r.CurrentTxnStartOffset, 10), strconv.FormatInt(r.LastTimestamp, 10), strconv.FormatInt(r.DurationMin, 10)}
}

// hangingCandidates are the open transactions whose producer last wrote
// more than maxTimeout before now.
func hangingCandidates(pps []partitionProducers, now time.Time, maxTimeout time.Duration) []ProducerRow {
	var out []ProducerRow
	for _, pp := range pps {
		for _, p := range pp.producers {
			if p.CurrentTxnStartOffset >= 0 && now.UnixMilli()-p.LastTimestamp > maxTimeout.Milliseconds() {
				out = append(out, p)
			}
		}
	}
	return out
}

// hangingOf keeps the candidates their coordinator does not know: no
// transactional id lists their producer id, the id is not described, or
// its description does not name the partition (in Ongoing, the
// partitions written; in PrepareCommit/PrepareAbort, those still without
// a marker: one named there will get its marker).
func hangingOf(cands []ProducerRow, ids map[int64]string, descs map[string]*kadm.DescribedTransaction, now time.Time) []HangingRow {
	var out []HangingRow
	for _, p := range cands {
		id, ok := ids[p.ProducerID]
		if ok {
			if d := descs[id]; d != nil && d.Topics.Lookup(p.Topic, p.Partition) {
				continue
			}
		}
		out = append(out, HangingRow{ProducerRow: p, DurationMin: (now.UnixMilli() - p.LastTimestamp) / 60000})
	}
	slices.SortFunc(out, func(a, b HangingRow) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.ProducerID, b.ProducerID))
	})
	return out
}

func (c *txnsCmd) hangingFlags() error {
	switch {
	case c.topic == "" && !c.set("broker-id"):
		return errors.New("the `find-hanging` command requires either --topic or --broker-id to limit the scope of the search")
	case c.set("partition") && c.topic == "":
		return errors.New("the --partition argument requires --topic to be provided")
	case c.set("partition") && c.partition < 0:
		return fmt.Errorf("--partition %d: want a partition number ≥ 0", c.partition)
	case c.maxTimeout < 0:
		return fmt.Errorf("--max-transaction-timeout %d: want minutes ≥ 0", c.maxTimeout)
	}
	return nil
}

// searchPartitions are the partitions find-hanging looks at: the one
// named, or those of the topic (every non-internal topic without
// --topic) that have a replica on --broker-id.
func (c *txnsCmd) searchPartitions(s session) ([]TopicPartition, error) {
	if c.set("partition") {
		return []TopicPartition{{c.topic, c.partition}}, nil
	}
	var topics []string
	if c.topic != "" {
		topics = append(topics, c.topic)
	}
	md, err := s.adm.Metadata(s.ctx, topics...)
	if err != nil {
		return nil, c.unreachable(err)
	}
	var tps []TopicPartition
	for _, t := range md.Topics.Sorted() {
		if t.Err != nil {
			return nil, fmt.Errorf("failed to describe topic %s: %w", t.Topic, t.Err)
		}
		if c.topic == "" && t.IsInternal {
			continue
		}
		for _, p := range t.Partitions.Sorted() {
			if c.brokerID < 0 || slices.Contains(p.Replicas, c.brokerID) {
				tps = append(tps, TopicPartition{t.Topic, p.Partition})
			}
		}
	}
	return tps, nil
}

func (c *txnsCmd) findHanging(ctx context.Context, std streams) error {
	if err := c.hangingFlags(); err != nil {
		return err
	}
	if !c.set("broker-id") {
		c.brokerID = -1
	}
	return c.with(ctx, func(s session) error {
		tps, err := c.searchPartitions(s)
		if err != nil {
			return err
		}
		pps, err := describeProducers(s.ctx, s, c.brokerID, tps)
		if err != nil {
			return c.txnErr(err)
		}
		var errs []error
		for _, pp := range pps {
			if pp.err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", pp.tp, pp.err))
			}
		}
		now := c.now()
		cands := hangingCandidates(pps, now, time.Duration(c.maxTimeout)*time.Minute)
		ids := map[int64]string{}
		descs := map[string]*kadm.DescribedTransaction{}
		if len(cands) > 0 {
			var pids []int64
			for _, p := range cands {
				if !slices.Contains(pids, p.ProducerID) {
					pids = append(pids, p.ProducerID)
				}
			}
			listed, err := s.adm.ListTransactions(s.ctx, pids, nil)
			if err != nil {
				return c.txnErr(fmt.Errorf("failed to list transactions for %d producers: %w", len(pids), err))
			}
			listed.Each(func(l kadm.ListedTransaction) {
				if slices.Contains(pids, l.ProducerID) {
					ids[l.ProducerID] = l.TxnID
				}
			})
			if len(ids) > 0 {
				var names []string
				for _, id := range ids {
					names = append(names, id)
				}
				described, err := s.adm.DescribeTransactions(s.ctx, names...)
				if err != nil {
					return c.txnErr(fmt.Errorf("failed to describe %d transactions: %w", len(names), err))
				}
				for _, d := range described {
					if d.Err == nil {
						descs[d.TxnID] = &d
					} else if !errors.Is(d.Err, kerr.TransactionalIDNotFound) {
						return c.txnErr(fmt.Errorf("failed to describe transaction %s: %w", d.TxnID, d.Err))
					}
				}
			}
		}
		rows := hangingOf(cands, ids, descs, now)
		if rows == nil {
			rows = []HangingRow{}
		}
		err = c.emit(std.out, rows, func() {
			var cells [][]string
			for _, r := range rows {
				cells = append(cells, r.cells())
			}
			prettyTable(std.out, hangingHeaders, cells)
		})
		switch {
		case err != nil:
			return err
		case len(rows) > 0:
			r := rows[0]
			return fmt.Errorf("%w: %d hanging transaction(s); abort one with `sluice transactions abort --topic %s --partition %d --start-offset %d`",
				cli.ErrProblem, len(rows), r.Topic, r.Partition, r.CurrentTxnStartOffset)
		case len(errs) > 0:
			return fmt.Errorf("some partitions could not be described (not searched): %w", errors.Join(errs...))
		}
		return nil
	})
}
