package quorum

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// recordTypeNames lists every RecordType constant of the package, read
// from its source: a record type added later is covered by the codec
// tests without anyone listing it here.
func recordTypeNames(t *testing.T) []RecordType {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []RecordType
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "RecordType" {
					continue
				}
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok {
						s, _ := strconv.Unquote(lit.Value)
						out = append(out, RecordType(s))
					}
				}
			}
		}
	}
	if len(out) < 19 {
		t.Fatalf("found only %d record types in the source: %v", len(out), out)
	}
	return out
}

// fill sets every field reachable from v to a value that is not the zero
// value (slices and maps get two elements, pointers a target), varying
// with *seed, so that a field a codec forgets cannot round-trip.
func fill(v reflect.Value, seed *int) {
	*seed++
	n := *seed
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), seed)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), seed)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			fill(v.Index(i), seed)
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			fill(v.Index(i), seed)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for i := 0; i < 2; i++ {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, seed)
			fill(e, seed)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(n%100 + 1))
		if strings.HasSuffix(v.Type().PkgPath(), "/kmsg") {
			v.SetInt(3) // a valid value of every ACL enum, which JSON writes by name
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(n%100 + 1))
	case reflect.Float64, reflect.Float32:
		v.SetFloat(float64(n) + 0.5)
	default:
		panic(fmt.Sprintf("fill: kind %s", v.Kind()))
	}
}

// TestEntryCodecKeepsEveryField: every record type, with every field
// set, comes back from the binary encoding equal. A field added to a
// record without its codec fails here: add it to codec_records.go (in a
// new record version, read as zero from the older one).
func TestEntryCodecKeepsEveryField(t *testing.T) {
	seed := 0
	for _, typ := range recordTypeNames(t) {
		r := newRecord(typ)
		if r == nil {
			t.Errorf("record type %q has no case in newRecord", typ)
			continue
		}
		fill(reflect.ValueOf(r).Elem(), &seed)
		b, err := EncodeEntry([]Record{r})
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		got, err := DecodeEntry(b)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if !reflect.DeepEqual(got[0], r) {
			t.Errorf("%s does not round-trip through the binary encoding:\n got %#v\nwant %#v", typ, got[0], r)
		}
		// And the JSON of older builds still reads.
		js, err := encodeJSONEntry([]Record{r})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := DecodeEntry(js); err != nil || !reflect.DeepEqual(got[0], r) {
			t.Errorf("%s: JSON entry: %v %#v", typ, err, got)
		}
	}
}

// TestSnapshotCodecKeepsEveryField: an image with every field set (not a
// valid one: the invariant check is skipped) comes back from the binary
// snapshot with the same JSON, and so with every exported field.
func TestSnapshotCodecKeepsEveryField(t *testing.T) {
	seed := 0
	im := NewImage()
	fill(reflect.ValueOf(im).Elem(), &seed)
	// The snapshot keys brokers by id and topics by name.
	brokers, topics := im.Brokers, im.Topics
	im.Brokers, im.Topics = map[int32]*Broker{}, map[string]*Topic{}
	for _, b := range brokers {
		im.Brokers[b.ID] = b
	}
	for _, t := range topics {
		im.Topics[t.Name] = t
	}
	// Nil and empty rare fields take other paths: cover both.
	for _, t := range im.Topics {
		t.Partitions = append(t.Partitions, Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1}, Partition{Replicas: []int32{}, AddingReplicas: []int32{}})
		t.Configs = map[string]string{}
		break
	}
	var b bytes.Buffer
	if err := WriteSnapshot(&b, im, 77); err != nil {
		t.Fatal(err)
	}
	got, applied, err := readBinarySnapshot(bufio.NewReader(bytes.NewReader(b.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	var want, have bytes.Buffer
	_ = writeJSONSnapshot(&want, im, 77)
	_ = writeJSONSnapshot(&have, got, applied)
	if want.String() != have.String() {
		t.Fatalf("snapshot round trip:\n got %s\nwant %s", have.String(), want.String())
	}
	for name, tp := range im.Topics {
		if !reflect.DeepEqual(tp.Partitions, got.Topics[name].Partitions) || !reflect.DeepEqual(tp.Configs, got.Topics[name].Configs) {
			t.Fatalf("topic %s: nil and empty differ:\n got %#v\nwant %#v", name, got.Topics[name], tp)
		}
	}
	for id, br := range im.Brokers {
		if !reflect.DeepEqual(br, got.Brokers[id]) {
			t.Fatalf("broker %d:\n got %#v\nwant %#v", id, got.Brokers[id], br)
		}
	}
	if !bytes.Equal(snapshotBytes(got, applied), b.Bytes()) {
		t.Fatal("the decoded image encodes to other bytes")
	}
}

// richImageCommands makes an image with a bit of everything: brokers
// with racks and endpoints, a fenced one, configs, a reassignment in
// flight, an unclean election, an offline log dir, SCRAM, ACLs, quotas
// and broker configs.
func richImageCommands() []Command {
	user := "alice"
	return []Command{
		&RegisterBroker{ID: 1, Rack: "a", Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "h1", Port: 9092}}, CleanShutdown: true},
		&RegisterBroker{ID: 2, Rack: "b"}, &RegisterBroker{ID: 3, Rack: "a"}, &RegisterBroker{ID: 4},
		&UnfenceBroker{ID: 1, Epoch: AnyEpoch}, &UnfenceBroker{ID: 2, Epoch: AnyEpoch},
		&UnfenceBroker{ID: 3, Epoch: AnyEpoch}, &UnfenceBroker{ID: 4, Epoch: AnyEpoch},
		&CreateTopics{Topics: []TopicSpec{
			{Name: "plain", Assignments: [][]int32{{1, 2, 3}, {2, 3, 1}}, Configs: map[string]string{"retention.ms": "1000"}},
			{Name: "unclean", Assignments: [][]int32{{4}}, Configs: map[string]string{ConfigUncleanLeaderElection: "true"}},
		}},
		&AlterPartitionReassignments{Partitions: []ReassignmentSpec{{Topic: "plain", Partition: 0, Replicas: []int32{4, 2, 3}}}},
		&FenceBroker{ID: 4, Epoch: AnyEpoch},
		&LogDirOffline{ID: 3, Epoch: AnyEpoch, Dir: "/data"},
		&AllocateProducerIDs{BrokerID: 1, BrokerEpoch: AnyEpoch},
		&AlterScramCredentials{Upsertions: []ScramUpsertion{{User: user, Mechanism: "SCRAM-SHA-256",
			Credential: ScramCredential{Salt: []byte("salt"), StoredKey: bytes.Repeat([]byte{1}, 32), ServerKey: bytes.Repeat([]byte{2}, 32), Iterations: 4096}}}},
		&CreateACLs{Bindings: []ACLBinding{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "plain", PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}}},
		&AlterClientQuotas{Entries: []QuotaAlteration{{Entity: QuotaEntity{User: &user}, Ops: []QuotaOp{{Key: QuotaProducerByteRate, Value: 1024}}}}},
		&AlterBrokerConfigs{Broker: "1", Set: map[string]string{"leader.replication.throttled.rate": "100"}},
	}
}

// planEntries plans cmds one after the other on h and returns each
// command's records (one entry each).
// It panics on a refused command: the commands are the test's own.
func planEntries(h *harness, cmds []Command) [][]Record {
	var out [][]Record
	for _, cmd := range cmds {
		recs, _, err := Plan(h.im, h.pol, cmd)
		if err != nil {
			panic(fmt.Sprintf("%T: %v", cmd, err))
		}
		for _, r := range recs {
			if err := h.im.Replay(r); err != nil {
				panic(fmt.Sprintf("%T: %v", cmd, err))
			}
		}
		if len(recs) > 0 {
			out = append(out, recs)
		}
	}
	return out
}

// TestSnapshotRoundTripRichImage: a real image with every feature in use
// reads back from both encodings with the same content; damage to any
// single byte or a truncation is refused, never loaded short.
func TestSnapshotRoundTripRichImage(t *testing.T) {
	h := newHarness()
	planEntries(h, richImageCommands())
	p := h.im.Topics["plain"].Partitions[0]
	if !p.Reassigning() {
		t.Fatalf("the rich image lacks a reassignment: %s", p)
	}
	bin := snapshotBytes(h.im, 9)
	var js bytes.Buffer
	if err := writeJSONSnapshot(&js, h.im, 9); err != nil {
		t.Fatal(err)
	}
	for name, enc := range map[string][]byte{"binary": bin, "json": js.Bytes()} {
		im, applied, err := ReadSnapshot(bytes.NewReader(enc))
		if err != nil || applied != 9 {
			t.Fatalf("%s: %v applied %d", name, err, applied)
		}
		if !bytes.Equal(snapshotBytes(im, 9), bin) {
			t.Fatalf("%s: the image read back differs", name)
		}
		if im.acls == nil || len(im.ACLs) != 1 || im.TopicByID(h.im.Topics["plain"].ID) == nil {
			t.Fatalf("%s: derived indexes not rebuilt", name)
		}
	}
	for i := 0; i < len(bin); i += 3 {
		if i == 4 {
			continue // the version varint: another version is refused too, by its own message
		}
		bad := bytes.Clone(bin)
		bad[i] ^= 0x20
		if _, _, err := ReadSnapshot(bytes.NewReader(bad)); err == nil {
			t.Fatalf("a snapshot with byte %d changed loaded", i)
		}
	}
	for _, n := range []int{0, 1, 5, len(bin) / 2, len(bin) - 1} {
		if _, _, err := ReadSnapshot(bytes.NewReader(bin[:n])); err == nil {
			t.Fatalf("a snapshot cut to %d of %d bytes loaded", n, len(bin))
		}
	}
}

// TestEncodingSize: the common entries and snapshots are small.
func TestEncodingSize(t *testing.T) {
	id := NewUUID()
	pc := &PartitionChangeRecord{TopicID: id, Partition: 17, Leader: 2, ISR: []int32{2, 3}, LeaderEpoch: 5, PartitionEpoch: 9}
	one, _ := EncodeEntry([]Record{pc})
	js, _ := encodeJSONEntry([]Record{pc})
	if len(one) > 36 {
		t.Errorf("one partition_change takes %d bytes (JSON %d)", len(one), len(js))
	}
	parts := make([]Partition, 100)
	for i := range parts {
		parts[i] = Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}
	}
	b, _ := EncodeEntry([]Record{&CreateTopicRecord{Name: "topic-00001", ID: id, Partitions: parts}})
	if len(b) > 100*12+48 {
		t.Errorf("a 100-partition create_topic takes %d bytes", len(b))
	}
	h := newHarness()
	planEntries(h, []Command{&RegisterBroker{ID: 1}, &RegisterBroker{ID: 2}, &RegisterBroker{ID: 3},
		&UnfenceBroker{ID: 1, Epoch: AnyEpoch}, &UnfenceBroker{ID: 2, Epoch: AnyEpoch}, &UnfenceBroker{ID: 3, Epoch: AnyEpoch}})
	for i := range 20 {
		planEntries(h, []Command{&CreateTopics{Topics: []TopicSpec{{Name: fmt.Sprintf("topic-%05d", i), Partitions: 100, ReplicationFactor: 3}}}})
	}
	var snap bytes.Buffer
	_ = writeJSONSnapshot(&snap, h.im, 1)
	if bin := snapshotBytes(h.im, 1); len(bin)*5 > snap.Len() {
		t.Errorf("a snapshot of 2,000 partitions takes %d bytes, %.1f%% of the JSON", len(bin), 100*float64(len(bin))/float64(snap.Len()))
	}
	t.Logf("partition_change %d bytes (JSON %d); create_topic of 100 partitions %d bytes", len(one), len(js), len(b))
}

// TestDecodeEntryRefuses: versions and codes this build does not know,
// and damaged entries, are errors (the FSM panics on them rather than
// skip a change).
func TestDecodeEntryRefuses(t *testing.T) {
	good, _ := EncodeEntry([]Record{&FenceBrokerRecord{ID: 1, Epoch: 2}})
	for name, b := range map[string][]byte{
		"empty":           {},
		"entry version 3": append([]byte{3}, good[1:]...),
		"record version":  {EntryVersion, 1, codeFenceBroker, 2, 2, 2, 4},
		"unknown code":    {EntryVersion, 1, 99, 1, 0},
		"extra byte":      append(bytes.Clone(good), 0),
		"short":           good[:len(good)-1],
		"json version 2":  []byte(`{"v":2,"records":[]}`),
		"json type":       []byte(`{"v":1,"records":[{"type":"nope","data":{}}]}`),
		"json type in v2": {EntryVersion, 1, codeJSON, 1, 5, 4, 'n', 'o', 'p', 'e'},
	} {
		if _, err := DecodeEntry(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// FuzzDecodeEntry: any input decodes or fails without panicking, and
// what decodes encodes and decodes again to the same records.
func FuzzDecodeEntry(f *testing.F) {
	h := newHarness()
	for _, recs := range planEntries(h, richImageCommands()) {
		b, _ := EncodeEntry(recs)
		f.Add(b)
		js, _ := encodeJSONEntry(recs)
		f.Add(js)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		recs, err := DecodeEntry(in)
		if err != nil {
			return
		}
		b, err := EncodeEntry(recs)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeEntry(b)
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
		if fmt.Sprint(again) != fmt.Sprint(recs) {
			t.Fatalf("round trip:\n%v\n%v", again, recs)
		}
	})
}

// FuzzReadSnapshot: any input loads or fails without panicking, and a
// loaded image writes a snapshot that loads to the same bytes.
func FuzzReadSnapshot(f *testing.F) {
	h := newHarness()
	planEntries(h, richImageCommands())
	f.Add(snapshotBytes(h.im, 3))
	var js bytes.Buffer
	_ = writeJSONSnapshot(&js, h.im, 3)
	f.Add(js.Bytes())
	f.Add(snapshotBytes(NewImage(), 0))
	f.Fuzz(func(t *testing.T, in []byte) {
		im, applied, err := ReadSnapshot(bytes.NewReader(in))
		if err != nil {
			return
		}
		b := snapshotBytes(im, applied)
		again, applied2, err := ReadSnapshot(bytes.NewReader(b))
		if err != nil || applied2 != applied {
			t.Fatalf("re-written snapshot does not load: %v", err)
		}
		if !bytes.Equal(snapshotBytes(again, applied2), b) {
			t.Fatal("snapshot round trip changed the image")
		}
	})
}

// TestWriteFuzzCorpus writes the seeds above into testdata/fuzz when
// SLUICE_WRITE_CORPUS=1 (kept in the repository, run by make fuzz).
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("SLUICE_WRITE_CORPUS") == "" {
		t.Skip("set SLUICE_WRITE_CORPUS=1 to rewrite the fuzz corpus of the codecs")
	}
	h := newHarness()
	write := func(fuzz, name string, b []byte) {
		dir := filepath.Join("testdata", "fuzz", fuzz)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, recs := range planEntries(h, richImageCommands()) {
		b, _ := EncodeEntry(recs)
		write("FuzzDecodeEntry", fmt.Sprintf("binary-%02d-%s", i, recs[0].Type()), b)
		js, _ := encodeJSONEntry(recs)
		write("FuzzDecodeEntry", fmt.Sprintf("json-%02d-%s", i, recs[0].Type()), js)
	}
	write("FuzzReadSnapshot", "binary-rich", snapshotBytes(h.im, 3))
	var js bytes.Buffer
	_ = writeJSONSnapshot(&js, h.im, 3)
	write("FuzzReadSnapshot", "json-rich", js.Bytes())
	write("FuzzReadSnapshot", "binary-empty", snapshotBytes(NewImage(), 0))
}
