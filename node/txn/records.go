package txn

// The records of __transaction_state, in Kafka's schemas:
//
//	key   TxnMetadataKey v0 {transactionalId}
//	value TxnMetadataValue v1 (nil: tombstone, the id is removed)
//	        {producerId, producerEpoch, transactionTimeoutMs, state,
//	         topics[topic, partitions], lastUpdateTimestamp,
//	         startTimestamp, tag 0 previousProducerId, ...}
//
// One record is the whole id: written on every transition (InitProducerId,
// the first partitions of a transaction and each new one, Prepare*,
// Complete*). This coordinator writes value v1 with previousProducerId
// (the producer id before a rotation, so that KIP-360 recovery survives a
// failover), ClientTransactionVersion 2 for a transaction ended with
// EndTxn v5 (transaction.version 2) and NextProducerId (tag 1) for a
// prepared one whose completion rotates the producer id; it reads v0 and
// v1. States 6 (Dead) and 7
// (PrepareEpochFence) are never written and do not load.

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	keyVersion   = 0
	valueVersion = 1
)

func txnKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = keyVersion, id
	return k.AppendTo(nil)
}

func tombstone(id string) Record { return Record{Key: txnKey(id)} }

func metaRecord(id string, m meta) Record {
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID, v.ProducerEpoch = m.pid, m.epoch
	v.TimeoutMillis = int32(m.timeout / time.Millisecond)
	v.State = kmsg.TransactionState(m.state)
	for _, p := range m.parts {
		if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != p.Topic {
			t := kmsg.NewTxnMetadataValueTopic()
			t.Topic = p.Topic
			v.Topics = append(v.Topics, t)
		}
		v.Topics[len(v.Topics)-1].Partitions = append(v.Topics[len(v.Topics)-1].Partitions, p.Partition)
	}
	v.LastUpdateTimestamp, v.StartTimestamp = millis(m.updated), millis(m.start)
	v.PreviousProducerID = m.lastPid
	if m.tv2 {
		v.ClientTransactionVersion = 2
	}
	if m.rotating {
		v.NextProducerID, v.NextProducerEpoch = m.nextPid, 0
	}
	return Record{Key: txnKey(id), Value: v.AppendTo(nil)}
}

func (s *Shard) replay(key, value []byte) error {
	if s.loaded {
		return fmt.Errorf("%w: Replay after LoadDone", ErrUnsupportedRecord)
	}
	if len(key) < 2 {
		return fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(key))
	}
	if kv := int16(binary.BigEndian.Uint16(key)); kv != keyVersion {
		return fmt.Errorf("%w: key version %d", ErrUnsupportedRecord, kv)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("%w: key: %v", ErrCorruptRecord, err)
	}
	if value == nil {
		delete(s.txns, k.TransactionalID)
		return nil
	}
	if len(value) < 2 {
		return fmt.Errorf("%w: value of %d bytes", ErrCorruptRecord, len(value))
	}
	if vv := int16(binary.BigEndian.Uint16(value)); vv < 0 || vv > valueVersion {
		return fmt.Errorf("%w: value version %d", ErrUnsupportedRecord, vv)
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("%w: value: %v", ErrCorruptRecord, err)
	}
	st := State(v.State)
	if st < Empty || st > CompleteAbort {
		return fmt.Errorf("%w: state %d", ErrCorruptRecord, v.State)
	}
	if v.ProducerID < 0 || v.ProducerEpoch < 0 || v.TimeoutMillis <= 0 {
		return fmt.Errorf("%w: producer %d epoch %d timeout %d", ErrCorruptRecord, v.ProducerID, v.ProducerEpoch, v.TimeoutMillis)
	}
	m := meta{pid: v.ProducerID, epoch: v.ProducerEpoch, lastPid: v.PreviousProducerID,
		timeout: time.Duration(v.TimeoutMillis) * time.Millisecond, state: st,
		start: fromMillis(v.StartTimestamp), updated: fromMillis(v.LastUpdateTimestamp)}
	if m.lastPid < 0 {
		m.lastPid = -1
	}
	m.tv2 = v.ClientTransactionVersion >= 2
	if v.NextProducerID >= 0 && (st == PrepareCommit || st == PrepareAbort) {
		m.rotating, m.nextPid = true, v.NextProducerID
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.parts = append(m.parts, TopicPartition{t.Topic, p})
		}
	}
	m.parts = union(m.parts, nil)
	running := st == Ongoing || st == PrepareCommit || st == PrepareAbort
	if running && (m.start.IsZero() || len(m.parts) == 0) || !running && len(m.parts) > 0 ||
		m.epoch == math.MaxInt16 && st != PrepareAbort && st != CompleteAbort && !m.rotating {
		return fmt.Errorf("%w: %v with start %d, %d partitions, epoch %d", ErrCorruptRecord, st,
			v.StartTimestamp, len(m.parts), m.epoch)
	}
	s.txns[k.TransactionalID] = &txn{id: k.TransactionalID, meta: m, lastEpoch: -1}
	return nil
}
