package quorum

import (
	"encoding/json"
	"fmt"
)

// The binary encoding of a Raft log entry (EntryVersion 2):
//
//	entry  := version=0x02 uvarint(record count) record*
//	record := uvarint(code) uvarint(record version) uvarint(len) payload[len]
//
// Each record type has a code (recordCodes) and its own version, so one
// type can gain fields (a new version, read by newer builds; older
// versions read with the new fields zero) without touching the others.
// Code 0 carries a record as JSON: payload = string(type name) + the JSON
// of the record. Types without a binary codec (the small, rare ones:
// SCRAM credentials, ACLs, client quotas, broker configs, and any type
// added later) travel that way, so a new record type works before it
// gets a codec.
//
// A JSON entry (version 1, written before) starts with '{'; DecodeEntry
// reads both, so a log written by an older build replays unchanged.

// jsonEntryVersion is the version of the JSON entries older builds wrote.
const jsonEntryVersion = 1

// Record codes of the binary encoding; part of the on-disk format.
const (
	codeJSON            = 0
	codeClusterID       = 1
	codeRegisterBroker  = 2
	codeFenceBroker     = 3
	codeUnfenceBroker   = 4
	codeBrokerShutdown  = 5
	codeCreateTopic     = 6
	codeRemoveTopic     = 7
	codeTopicConfig     = 8
	codePartitionChange = 9
	codeProducerIDs     = 10
	codeAddPartitions   = 11
	codeLogDirOffline   = 12
	codeUnregister      = 13
)

// recordVersion is the version every binary record of this build writes
// and the newest it reads.
const recordVersion = 1

// maxEntryRecords bounds the records of one entry a decoder accepts (a
// fence of a broker on a million partitions is a million records).
const maxEntryRecords = 1 << 24

// EncodeEntry encodes a batch of records as one Raft log entry.
func EncodeEntry(recs []Record) ([]byte, error) {
	e := encoder{b: make([]byte, 0, 16+48*len(recs))}
	e.b = append(e.b, EntryVersion)
	e.uvarint(uint64(len(recs)))
	var body encoder
	for _, r := range recs {
		body.b = body.b[:0]
		code, err := encodeRecord(&body, r)
		if err != nil {
			return nil, err
		}
		e.uvarint(code)
		e.uvarint(recordVersion)
		e.uvarint(uint64(len(body.b)))
		e.b = append(e.b, body.b...)
	}
	return e.b, nil
}

// DecodeEntry decodes a Raft log entry written by EncodeEntry, or by an
// older build (JSON, version 1).
func DecodeEntry(b []byte) ([]Record, error) {
	if len(b) > 0 && b[0] == '{' {
		return decodeJSONEntry(b)
	}
	if len(b) == 0 || b[0] != EntryVersion {
		v := -1
		if len(b) > 0 {
			v = int(b[0])
		}
		return nil, fmt.Errorf("%w: entry version %d (this build reads 1 and %d)", ErrCorruptEntry, v, EntryVersion)
	}
	d := decoder{b: b, off: 1}
	n := d.uvarint()
	if n > maxEntryRecords || n > uint64(d.rest()/4) {
		d.fail("%d records", n)
	}
	if d.err != nil {
		return nil, d.err
	}
	recs := make([]Record, 0, n)
	for range n {
		code, version, size := d.uvarint(), d.uvarint(), d.uvarint()
		if size > uint64(d.rest()) {
			d.fail("record of %d bytes, %d left", size, d.rest())
		}
		body := decoder{b: d.raw(int(size))}
		if d.err != nil {
			return nil, d.err
		}
		r, err := decodeRecord(&body, code, version)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	d.done()
	if d.err != nil {
		return nil, d.err
	}
	return recs, nil
}

// encodeRecord writes r's payload and returns its code.
func encodeRecord(e *encoder, r Record) (uint64, error) {
	switch r := r.(type) {
	case *ClusterIDRecord:
		e.str(r.ClusterID)
		return codeClusterID, nil
	case *RegisterBrokerRecord:
		e.varint(int64(r.ID))
		e.varint(r.Epoch)
		e.endpoints(r.Endpoints)
		e.str(r.Rack)
		e.boolean(r.CleanShutdown)
		return codeRegisterBroker, nil
	case *FenceBrokerRecord:
		e.brokerEpoch(r.ID, r.Epoch)
		return codeFenceBroker, nil
	case *UnfenceBrokerRecord:
		e.brokerEpoch(r.ID, r.Epoch)
		return codeUnfenceBroker, nil
	case *BrokerShutdownRecord:
		e.brokerEpoch(r.ID, r.Epoch)
		return codeBrokerShutdown, nil
	case *UnregisterBrokerRecord:
		e.brokerEpoch(r.ID, r.Epoch)
		return codeUnregister, nil
	case *LogDirOfflineRecord:
		e.brokerEpoch(r.ID, r.Epoch)
		e.str(r.Dir)
		return codeLogDirOffline, nil
	case *CreateTopicRecord:
		e.str(r.Name)
		e.uuid(r.ID)
		e.strMap(r.Configs)
		e.partitions(r.Partitions)
		return codeCreateTopic, nil
	case *RemoveTopicRecord:
		e.str(r.Name)
		e.uuid(r.ID)
		return codeRemoveTopic, nil
	case *TopicConfigRecord:
		e.uuid(r.TopicID)
		e.strMap(r.Set)
		e.strs(r.Delete)
		return codeTopicConfig, nil
	case *PartitionChangeRecord:
		e.partitionChange(r)
		return codePartitionChange, nil
	case *ProducerIDsRecord:
		e.varint(int64(r.BrokerID))
		e.varint(r.BrokerEpoch)
		e.varint(r.Start)
		e.varint(r.Len)
		return codeProducerIDs, nil
	case *AddPartitionsRecord:
		e.uuid(r.TopicID)
		e.varint(int64(r.First))
		e.partitions(r.Partitions)
		return codeAddPartitions, nil
	}
	data, err := json.Marshal(r)
	if err != nil {
		return 0, fmt.Errorf("quorum: encode %s: %w", r.Type(), err)
	}
	e.str(string(r.Type()))
	e.b = append(e.b, data...)
	return codeJSON, nil
}

// decodeRecord reads one record's payload (all of d).
func decodeRecord(d *decoder, code, version uint64) (Record, error) {
	if version < 1 || version > recordVersion {
		return nil, fmt.Errorf("%w: record code %d version %d (this build reads up to %d): written by a newer build?",
			ErrCorruptEntry, code, version, recordVersion)
	}
	var r Record
	switch code {
	case codeJSON:
		typ := RecordType(d.str())
		data := d.raw(d.rest())
		if d.err != nil {
			return nil, d.err
		}
		if r = newRecord(typ); r == nil {
			return nil, fmt.Errorf("%w: unknown record type %q", ErrCorruptEntry, typ)
		}
		if err := json.Unmarshal(data, r); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorruptEntry, typ, err)
		}
		return r, nil
	case codeClusterID:
		r = &ClusterIDRecord{ClusterID: d.str()}
	case codeRegisterBroker:
		r = &RegisterBrokerRecord{ID: d.int32(), Epoch: d.varint(), Endpoints: d.endpoints(), Rack: d.str(), CleanShutdown: d.boolean()}
	case codeFenceBroker:
		id, epoch := d.brokerEpoch()
		r = &FenceBrokerRecord{ID: id, Epoch: epoch}
	case codeUnfenceBroker:
		id, epoch := d.brokerEpoch()
		r = &UnfenceBrokerRecord{ID: id, Epoch: epoch}
	case codeBrokerShutdown:
		id, epoch := d.brokerEpoch()
		r = &BrokerShutdownRecord{ID: id, Epoch: epoch}
	case codeUnregister:
		id, epoch := d.brokerEpoch()
		r = &UnregisterBrokerRecord{ID: id, Epoch: epoch}
	case codeLogDirOffline:
		id, epoch := d.brokerEpoch()
		r = &LogDirOfflineRecord{ID: id, Epoch: epoch, Dir: d.str()}
	case codeCreateTopic:
		r = &CreateTopicRecord{Name: d.str(), ID: d.uuid(), Configs: d.strMap(), Partitions: d.partitions()}
	case codeRemoveTopic:
		r = &RemoveTopicRecord{Name: d.str(), ID: d.uuid()}
	case codeTopicConfig:
		r = &TopicConfigRecord{TopicID: d.uuid(), Set: d.strMap(), Delete: d.strs()}
	case codePartitionChange:
		r = d.partitionChange()
	case codeProducerIDs:
		r = &ProducerIDsRecord{BrokerID: d.int32(), BrokerEpoch: d.varint(), Start: d.varint(), Len: d.varint()}
	case codeAddPartitions:
		r = &AddPartitionsRecord{TopicID: d.uuid(), First: d.int32(), Partitions: d.partitions()}
	default:
		return nil, fmt.Errorf("%w: unknown record code %d", ErrCorruptEntry, code)
	}
	d.done()
	if d.err != nil {
		return nil, fmt.Errorf("%s: %w", r.Type(), d.err)
	}
	return r, nil
}

func (e *encoder) brokerEpoch(id int32, epoch int64) {
	e.varint(int64(id))
	e.varint(epoch)
}

func (d *decoder) brokerEpoch() (int32, int64) { return d.int32(), d.varint() }

func (e *encoder) endpoints(eps []Endpoint) {
	e.count(len(eps), eps == nil)
	for _, ep := range eps {
		e.str(ep.Name)
		e.str(ep.Host)
		e.varint(int64(ep.Port))
	}
}

func (d *decoder) endpoints() []Endpoint {
	n, null := d.count(3)
	if null || d.err != nil {
		return nil
	}
	eps := make([]Endpoint, n)
	for i := range eps {
		eps[i] = Endpoint{Name: d.str(), Host: d.str(), Port: d.int32()}
	}
	return eps
}

// Flags of a partition_change record.
const (
	pcStaleISR   = 1 << 0
	pcUnclean    = 1 << 1
	pcAssignment = 1 << 2
	// pcELR and pcLastKnownELR: the eligible leader replicas and the
	// last-known ones follow (KIP-966; absent means empty).
	pcELR          = 1 << 3
	pcLastKnownELR = 1 << 4
	pcAllFlags     = pcStaleISR | pcUnclean | pcAssignment | pcELR | pcLastKnownELR
)

func (e *encoder) partitionChange(r *PartitionChangeRecord) {
	var flags byte
	if r.StaleISR {
		flags |= pcStaleISR
	}
	if r.Unclean != nil {
		flags |= pcUnclean
	}
	if r.Assignment != nil {
		flags |= pcAssignment
	}
	if len(r.ELR) > 0 {
		flags |= pcELR
	}
	if len(r.LastKnownELR) > 0 {
		flags |= pcLastKnownELR
	}
	e.uuid(r.TopicID)
	e.varint(int64(r.Partition))
	e.b = append(e.b, flags)
	e.varint(int64(r.Leader))
	e.int32s(r.ISR)
	e.varint(int64(r.LeaderEpoch))
	e.varint(int64(r.PartitionEpoch))
	if r.Unclean != nil {
		e.unclean(r.Unclean)
	}
	if a := r.Assignment; a != nil {
		e.int32s(a.Replicas)
		e.int32s(a.Adding)
		e.int32s(a.Removing)
	}
	if len(r.ELR) > 0 {
		e.int32s(r.ELR)
	}
	if len(r.LastKnownELR) > 0 {
		e.int32s(r.LastKnownELR)
	}
}

func (d *decoder) partitionChange() *PartitionChangeRecord {
	r := &PartitionChangeRecord{TopicID: d.uuid(), Partition: d.int32()}
	flags := d.byte1()
	if flags&^pcAllFlags != 0 {
		d.fail("partition_change flags %#x", flags)
	}
	r.StaleISR = flags&pcStaleISR != 0
	r.Leader = d.int32()
	r.ISR = d.int32s()
	r.LeaderEpoch = d.int32()
	r.PartitionEpoch = d.int32()
	if flags&pcUnclean != 0 {
		u := d.unclean()
		r.Unclean = &u
	}
	if flags&pcAssignment != 0 {
		r.Assignment = &Assignment{Replicas: d.int32s(), Adding: d.int32s(), Removing: d.int32s()}
	}
	if flags&pcELR != 0 {
		r.ELR = d.int32s()
	}
	if flags&pcLastKnownELR != 0 {
		r.LastKnownELR = d.int32s()
	}
	return r
}

func (e *encoder) unclean(u *UncleanElection) {
	e.varint(int64(u.LeaderEpoch))
	e.varint(int64(u.Leader))
	e.int32s(u.LostISR)
}

func (d *decoder) unclean() UncleanElection {
	return UncleanElection{LeaderEpoch: d.int32(), Leader: d.int32(), LostISR: d.int32s()}
}

// Flags of a partition (in create_topic, add_partitions and snapshots):
// which of the rarely set fields follow.
const (
	ptStaleISR = 1 << 0
	ptUnclean  = 1 << 1
	ptAdding   = 1 << 2
	ptRemoving = 1 << 3
	// ptELR and ptLastKnownELR: KIP-966's eligible leader replicas.
	ptELR          = 1 << 4
	ptLastKnownELR = 1 << 5
	ptAllFlags     = ptStaleISR | ptUnclean | ptAdding | ptRemoving | ptELR | ptLastKnownELR
)

// partition writes one partition: a flags byte, the replicas and ISR,
// leader and epochs, then the fields the flags name. The usual RF=3
// partition takes 12 bytes.
func (e *encoder) partition(p *Partition) {
	var flags byte
	if p.StaleISR {
		flags |= ptStaleISR
	}
	if p.UncleanElections != nil {
		flags |= ptUnclean
	}
	if p.AddingReplicas != nil {
		flags |= ptAdding
	}
	if p.RemovingReplicas != nil {
		flags |= ptRemoving
	}
	if len(p.ELR) > 0 {
		flags |= ptELR
	}
	if len(p.LastKnownELR) > 0 {
		flags |= ptLastKnownELR
	}
	e.b = append(e.b, flags)
	e.int32s(p.Replicas)
	e.int32s(p.ISR)
	e.varint(int64(p.Leader))
	e.varint(int64(p.LeaderEpoch))
	e.varint(int64(p.PartitionEpoch))
	if p.UncleanElections != nil {
		e.count(len(p.UncleanElections), false)
		for i := range p.UncleanElections {
			e.unclean(&p.UncleanElections[i])
		}
	}
	if p.AddingReplicas != nil {
		e.int32s(p.AddingReplicas)
	}
	if p.RemovingReplicas != nil {
		e.int32s(p.RemovingReplicas)
	}
	if len(p.ELR) > 0 {
		e.int32s(p.ELR)
	}
	if len(p.LastKnownELR) > 0 {
		e.int32s(p.LastKnownELR)
	}
}

func (d *decoder) partition(p *Partition, arena *[]int32) {
	flags := d.byte1()
	if flags&^ptAllFlags != 0 {
		d.fail("partition flags %#x", flags)
	}
	p.StaleISR = flags&ptStaleISR != 0
	p.Replicas = d.int32sInto(arena)
	p.ISR = d.int32sInto(arena)
	p.Leader = d.int32()
	p.LeaderEpoch = d.int32()
	p.PartitionEpoch = d.int32()
	if flags&ptUnclean != 0 {
		n, _ := d.count(4)
		p.UncleanElections = make([]UncleanElection, n)
		for i := range p.UncleanElections {
			p.UncleanElections[i] = d.unclean()
		}
	}
	if flags&ptAdding != 0 {
		p.AddingReplicas = d.int32s()
	}
	if flags&ptRemoving != 0 {
		p.RemovingReplicas = d.int32s()
	}
	if flags&ptELR != 0 {
		p.ELR = d.int32s()
	}
	if flags&ptLastKnownELR != 0 {
		p.LastKnownELR = d.int32s()
	}
}

func (e *encoder) partitions(ps []Partition) {
	e.count(len(ps), ps == nil)
	for i := range ps {
		e.partition(&ps[i])
	}
}

func (d *decoder) partitions() []Partition {
	n, null := d.count(7)
	if null || d.err != nil {
		return nil
	}
	ps := make([]Partition, n)
	var arena []int32
	for i := range ps {
		d.partition(&ps[i], &arena)
	}
	return ps
}

// wireRecord and wireEntry are the JSON encoding of an entry (version 1),
// which builds before the binary encoding wrote; read for their logs.
type wireRecord struct {
	Type RecordType      `json:"type"`
	Data json.RawMessage `json:"data"`
}

type wireEntry struct {
	Version int          `json:"v"`
	Records []wireRecord `json:"records"`
}

// encodeJSONEntry writes an entry as builds before the binary encoding
// did: tests use it to make JSON-era logs.
func encodeJSONEntry(recs []Record) ([]byte, error) {
	e := wireEntry{Version: jsonEntryVersion, Records: make([]wireRecord, len(recs))}
	for i, r := range recs {
		data, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("quorum: encode %s: %w", r.Type(), err)
		}
		e.Records[i] = wireRecord{Type: r.Type(), Data: data}
	}
	return json.Marshal(e)
}

func decodeJSONEntry(b []byte) ([]Record, error) {
	var e wireEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptEntry, err)
	}
	if e.Version != jsonEntryVersion {
		return nil, fmt.Errorf("%w: JSON entry version %d (JSON entries are version %d)", ErrCorruptEntry, e.Version, jsonEntryVersion)
	}
	recs := make([]Record, len(e.Records))
	for i, w := range e.Records {
		r := newRecord(w.Type)
		if r == nil {
			return nil, fmt.Errorf("%w: unknown record type %q", ErrCorruptEntry, w.Type)
		}
		if err := json.Unmarshal(w.Data, r); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorruptEntry, w.Type, err)
		}
		recs[i] = r
	}
	return recs, nil
}
