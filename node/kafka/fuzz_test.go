package kafka

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/segment"
)

var rewriteSeeds = flag.Bool("rewrite-seeds", false, "rewrite testdata/fuzz/FuzzRequestFrame from fuzzSeeds")

// fuzzMaxFrame keeps fuzz inputs' frames small; the limit's code path is the
// same as with the default.
const fuzzMaxFrame = 1 << 20

// FuzzRequestFrame feeds a connection's byte stream through everything the
// reader and the serve goroutine do with it, minus the socket: frame
// reading, header and body decoding, the handler (against the fake broker
// and topic admin, with the data APIs)
// and response encoding, decoded back as a client would. Any panic fails.
func FuzzRequestFrame(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed.frame)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	f.Fuzz(func(t *testing.T, stream []byte) {
		// A fresh server and fake per input: the fake admin keeps
		// the topics it creates.
		s, err := NewServer(newFakeData("127.0.0.1:9092"), Options{MaxRequestBytes: fuzzMaxFrame})
		if err != nil {
			t.Fatal(err)
		}
		r := bytes.NewReader(stream)
		for {
			frame, err := readFrame(r, fuzzMaxFrame)
			if err != nil {
				return
			}
			req, err := decodeRequest(frame, s.table)
			if err != nil {
				if !errors.Is(err, ErrMalformedRequest) && !errors.Is(err, ErrUnknownAPI) && !errors.Is(err, ErrUnsupportedVersion) && !errors.Is(err, ErrFrameTooLarge) {
					t.Fatalf("decode error %v wraps no sentinel", err)
				}
				return
			}
			// A cancelled context: a long-polling Fetch answers at
			// once instead of waiting out a fuzzed max_wait_ms.
			resp, err := req.api.handle(done, s, req)
			if err != nil {
				return
			}
			if resp == nil { // acks=0 Produce: no answer
				continue
			}
			checkResponse(appendResponse(nil, req.correlationID, resp), req, resp)
		}
	})
}

type fuzzSeed struct {
	name  string
	frame []byte
}

// fuzzSeeds are real encoded requests, alone and pipelined, plus a few bad
// frames; the committed corpus is written from them (-rewrite-seeds).
func fuzzSeeds() []fuzzSeed {
	rf := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed"))
	enc := func(req kmsg.Request, corr int32) []byte { return rf.AppendRequest(nil, req, corr) }
	av := func(v int16) []byte {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo", "1.22.3"
		return enc(req, int32(v)+1)
	}
	md := func(v int16, topics ...string) []byte {
		req := metadataRequest(v, topics...)
		req.AllowAutoTopicCreation = true
		return enc(req, 100+int32(v))
	}
	mdByID := func() []byte {
		req := metadataRequest(12)
		req.Topics = []kmsg.MetadataRequestTopic{{TopicID: ordersID}, {TopicID: [16]byte{1}}}
		return enc(req, 200)
	}
	create := func(v int16) []byte {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = v
		req.TimeoutMillis = 1000
		cfg := createTopic("with-config", 2, 1)
		cfg.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}
		req.Topics = []kmsg.CreateTopicsRequestTopic{cfg, assigned("manual", []int32{1, 2}, []int32{2, 1}), createTopic("dup", 1, 1), createTopic("dup", -1, -1), createTopic("bad name", 1, 1)}
		return enc(req, 300+int32(v))
	}
	del := func(v int16) []byte {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version = v
		req.TopicNames = []string{"orders", "nope"}
		req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("orders")}, {TopicID: offsetID}, {}}
		return enc(req, 400+int32(v))
	}
	batch := segment.BuildBatch(1, []byte("a"), []byte("bc"))
	corrupt := append([]byte(nil), batch...)
	corrupt[len(corrupt)-1] ^= 1
	produce := func(v int16, acks int16) []byte {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = v, acks, 1000
		t := kmsg.NewProduceRequestTopic()
		t.Topic = "orders"
		t.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batch}, {Partition: 1, Records: corrupt}, {Partition: 9, Records: batch}}
		req.Topics = []kmsg.ProduceRequestTopic{t}
		return enc(req, 500+int32(v))
	}
	fetch := func(v int16) []byte {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxBytes, req.SessionEpoch = v, 1<<20, -1
		t := kmsg.NewFetchRequestTopic()
		t.Topic = "orders"
		p := kmsg.NewFetchRequestTopicPartition()
		p.PartitionMaxBytes, p.CurrentLeaderEpoch = 1<<16, 7
		p2 := p
		p2.Partition, p2.FetchOffset = 1, 5
		t.Partitions = []kmsg.FetchRequestTopicPartition{p, p2}
		req.Topics = []kmsg.FetchRequestTopic{t}
		return enc(req, 600+int32(v))
	}
	listOffsets := func(v int16) []byte {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = v
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = "orders"
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Timestamp, p.MaxNumOffsets = -1, 1
		p2 := p
		p2.Partition, p2.Timestamp = 1, -2
		t.Partitions = []kmsg.ListOffsetsRequestTopicPartition{p, p2}
		req.Topics = []kmsg.ListOffsetsRequestTopic{t}
		return enc(req, 700+int32(v))
	}
	epochs := func(v int16) []byte {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version = v
		t := kmsg.NewOffsetForLeaderEpochRequestTopic()
		t.Topic = "orders"
		p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		p.LeaderEpoch = 3
		t.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{p}
		req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{t}
		return enc(req, 800+int32(v))
	}
	initPID := func(v int16) []byte {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = v
		return enc(req, 900+int32(v))
	}
	describeConfigs := func(v int16) []byte {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = v
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
		r2 := r
		r2.ResourceType, r2.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
		req.Resources = []kmsg.DescribeConfigsRequestResource{r, r2}
		return enc(req, 1000+int32(v))
	}
	alterConfigs := func(v int16) []byte {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = v
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
		r.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			{Name: "retention.ms", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("5")},
			{Name: "segment.ms", Op: kmsg.IncrementalAlterConfigOpDelete},
		}
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{r}
		return enc(req, 1100+int32(v))
	}
	updateFeatures := func(v int16) []byte {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version = v
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType, u.AllowDowngrade = "transaction.version", 1, 2, true
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{u}
		return enc(req, 5700+int32(v))
	}
	describeCluster := func(v int16) []byte {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType = v, 1
		return enc(req, 1200+int32(v))
	}
	elect := func(v int16) []byte {
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version, req.ElectionType = v, 1
		t := kmsg.NewElectLeadersRequestTopic()
		t.Topic, t.Partitions = "orders", []int32{0, 1}
		req.Topics = []kmsg.ElectLeadersRequestTopic{t}
		return enc(req, 1300+int32(v))
	}
	describeQuorum := func(v int16) []byte {
		req := kmsg.NewPtrDescribeQuorumRequest()
		req.Version = v
		t := kmsg.NewDescribeQuorumRequestTopic()
		t.Topic = MetadataTopic
		t.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
		req.Topics = []kmsg.DescribeQuorumRequestTopic{t}
		return enc(req, 1400+int32(v))
	}
	createPartitions := func(v int16) []byte {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version = v
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = "orders", 4
		t.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}, {Replicas: []int32{1}}}
		req.Topics = []kmsg.CreatePartitionsRequestTopic{t}
		return enc(req, 1500+int32(v))
	}
	findCoordinator := func(v int16, typ int8) []byte {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType = v, typ
		req.CoordinatorKey, req.CoordinatorKeys = "group", []string{"group", "other"}
		return enc(req, 1600+int32(v))
	}
	txnProduce := func(v int16) []byte {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = v, -1, 1000, kmsg.StringPtr("tx")
		t := kmsg.NewProduceRequestTopic()
		t.Topic = "orders"
		t.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: txnBatch(7, 1, "a")}, {Partition: 1, Records: batch}}
		req.Topics = []kmsg.ProduceRequestTopic{t}
		return enc(req, 1700+int32(v))
	}
	readCommitted := func(v int16) []byte {
		f := kmsg.NewPtrFetchRequest()
		f.Version, f.MaxBytes, f.IsolationLevel = v, 1<<20, 1
		t := kmsg.NewFetchRequestTopic()
		t.Topic = "orders"
		p := kmsg.NewFetchRequestTopicPartition()
		p.PartitionMaxBytes = 1 << 16
		t.Partitions = []kmsg.FetchRequestTopicPartition{p}
		f.Topics = []kmsg.FetchRequestTopic{t}
		return enc(f, 1800+int32(v))
	}
	markers := func(v int16) []byte {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = v
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 7, 1, true, 3
		m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "orders", Partitions: []int32{0, 9}}, {Topic: offsetsTopic, Partitions: []int32{0}}}
		req.Markers = []kmsg.WriteTxnMarkersRequestMarker{m}
		return enc(req, 1900+int32(v))
	}
	describeProducers := func() []byte {
		req := kmsg.NewPtrDescribeProducersRequest()
		req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "orders", Partitions: []int32{0, 3}}, {Topic: "nope", Partitions: []int32{0}}}
		return enc(req, 2000)
	}
	describeTopicPartitions := func(cursor bool) []byte {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "orders"}, {Topic: "nope"}}
		req.ResponsePartitionLimit = 1
		if cursor {
			req.Topics = nil
			req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "orders", Partition: 1}
		}
		return enc(req, 2100)
	}
	return []fuzzSeed{
		{"describetopicpartitions-v0", describeTopicPartitions(false)},
		{"describetopicpartitions-v0-cursor", describeTopicPartitions(true)},
		{"produce-v9-transactional", txnProduce(9)},
		{"fetch-v12-read-committed", readCommitted(12)},
		{"writetxnmarkers-v0", markers(0)},
		{"writetxnmarkers-v1", markers(1)},
		{"describeproducers-v0", describeProducers()},
		{"findcoordinator-v0", findCoordinator(0, 0)},
		{"findcoordinator-v2-txn", findCoordinator(2, 1)},
		{"findcoordinator-v4", findCoordinator(4, 0)},
		{"describequorum-v0", describeQuorum(0)},
		{"describequorum-v2", describeQuorum(2)},
		{"createpartitions-v0", createPartitions(0)},
		{"createpartitions-v3", createPartitions(3)},
		{"electleaders-v0", elect(0)},
		{"electleaders-v2", elect(2)},
		{"produce-v3", produce(3, 1)},
		{"produce-v9-acks-all", produce(9, -1)},
		{"produce-v7-acks-0", produce(7, 0)},
		{"fetch-v4", fetch(4)},
		{"fetch-v12", fetch(12)},
		{"listoffsets-v0", listOffsets(0)},
		{"listoffsets-v8", listOffsets(8)},
		{"offsetforleaderepoch-v0", epochs(0)},
		{"offsetforleaderepoch-v4", epochs(4)},
		{"initproducerid-v0", initPID(0)},
		{"initproducerid-v4", initPID(4)},
		{"initproducerid-v5", initPID(5)},
		{"updatefeatures-v0", updateFeatures(0)},
		{"updatefeatures-v2", updateFeatures(2)},
		{"describeconfigs-v0", describeConfigs(0)},
		{"describeconfigs-v4", describeConfigs(4)},
		{"incrementalalterconfigs-v1", alterConfigs(1)},
		{"describecluster-v1", describeCluster(1)},
		{"createtopics-v0", create(0)},
		{"createtopics-v5-flexible", create(5)},
		{"createtopics-v7", create(7)},
		{"deletetopics-v0", del(0)},
		{"deletetopics-v6-by-id", del(6)},
		{"apiversions-v0", av(0)},
		{"apiversions-v3", av(3)},
		{"apiversions-v5-unsupported", av(5)},
		{"metadata-v0-all", md(0)},
		{"metadata-v1-orders", md(1, "orders", "nope")},
		{"metadata-v9-flexible", md(9, "orders")},
		{"metadata-v12-by-id", mdByID()},
		{"pipelined", bytes.Join([][]byte{av(3), md(12, "orders"), av(1), md(4)}, nil)},
		{"negative-size", []byte{0xff, 0xff, 0xff, 0xff}},
		{"array-longer-than-frame", append(md(1)[:len(md(1))-4], 0x7f, 0xff, 0xff, 0xff)},
	}
}

func seedDir() string { return filepath.Join("testdata", "fuzz", "FuzzRequestFrame") }

// TestFuzzSeedCorpus keeps the committed corpus equal to fuzzSeeds, so that
// plain `go test` runs every seed through the fuzz body.
func TestFuzzSeedCorpus(t *testing.T) {
	for _, seed := range fuzzSeeds() {
		path := filepath.Join(seedDir(), seed.name)
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(seed.frame)))
		if *rewriteSeeds {
			if err := os.MkdirAll(seedDir(), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) || err == nil && string(got) != want {
			t.Errorf("%s is stale or missing: run go test -run TestFuzzSeedCorpus -rewrite-seeds", path)
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

// TestFuzzSeedsDecode: the request seeds really are requests the server
// answers (a corpus of only rejected inputs would fuzz nothing past the
// header).
func TestFuzzSeedsDecode(t *testing.T) {
	s, err := NewServer(newFakeData("127.0.0.1:9092"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range fuzzSeeds() {
		if strings.Contains(seed.name, "negative") || strings.Contains(seed.name, "longer") {
			continue
		}
		r := bytes.NewReader(seed.frame)
		for {
			frame, err := readFrame(r, DefaultMaxRequestBytes)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", seed.name, err)
			}
			req, err := decodeRequest(frame, s.table)
			if err != nil {
				t.Fatalf("%s: %v", seed.name, err)
			}
			if _, err := req.api.handle(context.Background(), s, req); err != nil {
				t.Fatalf("%s: %v", seed.name, err)
			}
		}
	}
}
