package kafka

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// ApiVersions (key 18), versions 0-3.
//
// Lists every row of the dispatch table with its version range, in key order;
// wide ranges matter, since librdkafka enables features by range overlap and
// sarama clamps to them. Produce is listed from v0 though v0-2 close the
// connection (api.listFrom0: librdkafka compresses only then). v3 answers
// list the transaction.version feature when transactions are served
// (addFeatures: supported 0-2, finalized at the Broker's TxnVersion level,
// FinalizedFeaturesEpoch 0); otherwise no features and epoch -1.
//
// A version the server does not support is not an error that closes the
// connection, unlike for every other API (KIP-511): the body is not read and
// the answer is a v0 response, with a v0 header like every ApiVersions
// response, carrying UNSUPPORTED_VERSION and, in ApiKeys, only ApiVersions'
// own range. That is what Kafka sends (ApiVersionsRequest.getErrorResponse),
// and a client retries at the highest version listed.
//
// Requests over 64 KiB close the connection (Kafka has no such limit; a real
// one is a few dozen bytes, see api.maxBytes).
//
// v3+ requests name the client software; a name or version that does not
// match Kafka's pattern is answered INVALID_REQUEST with no ApiKeys, as Kafka
// does.

// apiVersionsMaxBytes bounds an ApiVersions request frame.
const apiVersionsMaxBytes = 64 << 10

// validSoftwareName matches Kafka's pattern for ClientSoftwareName and
// ClientSoftwareVersion (ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN,
// [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?), by hand: the regexp was 12%
// of the CPU of a pipelined ApiVersions benchmark.
func validSoftwareName(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func handleAPIVersions(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	resp := kmsg.NewPtrApiVersionsResponse()
	if r.body == nil {
		resp.Version = 0
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		self := s.table.lookup(kmsg.ApiVersions.Int16())
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{apiKeyRange(self)}
		return resp, nil
	}
	req := r.body.(*kmsg.ApiVersionsRequest)
	resp.Version = req.Version
	if req.Version >= 3 && (!validSoftwareName(req.ClientSoftwareName) || !validSoftwareName(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	resp.ApiKeys = make([]kmsg.ApiVersionsResponseApiKey, 0, len(s.table.apis))
	for _, a := range s.table.apis {
		resp.ApiKeys = append(resp.ApiKeys, apiKeyRange(a))
	}
	if req.Version >= 3 {
		addFeatures(s, resp)
	}
	return resp, nil
}

// addFeatures lists the features of a v3+ answer. With Features, the
// cluster's (KIP-584): every feature the quorum supports, the levels it
// finalized and their epoch. Otherwise transaction.version when the
// Broker serves Transactions (supported 0-2, finalized at its
// TxnVersion's level, 2 without one, epoch 0), as Kafka 4 lists it. A
// feature at level 0 is not finalized, as in Kafka.
func addFeatures(s *Server, resp *kmsg.ApiVersionsResponse) {
	if f, ok := s.broker.(Features); ok {
		for _, r := range quorum.SupportedFeatures() {
			sf := kmsg.NewApiVersionsResponseSupportedFeature()
			sf.Name, sf.MinVersion, sf.MaxVersion = r.Name, r.Min, r.Max
			resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		}
		levels, epoch := f.FinalizedFeatures()
		resp.FinalizedFeaturesEpoch = epoch
		for _, name := range slices.Sorted(maps.Keys(levels)) {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, levels[name], levels[name]
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
		return
	}
	if !has[Transactions](s.broker) {
		return
	}
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = "transaction.version", 0, MaxTransactionVersion
	resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	level := int16(MaxTransactionVersion)
	if v, ok := s.broker.(TxnVersion); ok {
		level = min(v.TransactionVersion(), MaxTransactionVersion)
	}
	resp.FinalizedFeaturesEpoch = 0
	if level > 0 {
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = "transaction.version", level, level
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
}

func apiKeyRange(a *api) kmsg.ApiVersionsResponseApiKey {
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey = a.key.Int16()
	k.MinVersion = a.min
	if a.listFrom0 {
		k.MinVersion = 0
	}
	k.MaxVersion = a.max
	return k
}
