package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-log/sluice/quorum"
)

// Fetch (key 1), versions 4-15 (4-12 when Logs is not also TopicNames);
// served when the Broker implements Logs.
//
// Version notes: v13 names topics by ID (KIP-516; an unknown ID answers
// UNKNOWN_TOPIC_ID); v15 moves the replica id into the ReplicaState tag
// with the fetching broker's epoch (KIP-903). A replica fetch below v15
// carries no broker epoch and is passed on with BrokerEpoch -1, which the
// node refuses (every Sluice broker fetches with v15): Kafka 3.5+ still
// takes such fetches from replicas, but nothing then tells a zombie or a
// forger from the replica it names.
//
// Reads committed batches (below the high watermark) of each partition
// through Logs.Fetch, in request order, within max_bytes for the response
// and partition_max_bytes per partition, except that the first batch found
// is returned whole however large (KIP-74). When fewer than min_bytes were
// found and no partition has an error, the request waits up to max_wait_ms
// for an append (Logs.Appended, no polling) and reads again. The current
// leader epoch (v9+) is checked by the Broker (FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH). A replica fetch (replica id >= 0) reads up to the
// leader's log end and carries last_fetched_epoch (v12); a diverging epoch
// in the answer (KIP-320/595) ends the wait at once.
//
// Fetch from follower (KIP-392, v11+): a consumer's fetch may go to a
// follower, which answers up to its own high watermark (LSO for
// read_committed); below v11 only the leader serves consumers
// (NOT_LEADER_OR_FOLLOWER). When the Broker redirects a v11+ consumer
// with a rack_id (replica.selector.class RackAwareReplicaSelector), the
// partition answers no records and preferred_read_replica, with the
// leader's offsets, and the request is answered at once.
//
// Isolation (v4+): a consumer with isolation_level 1 (read_committed)
// reads only below the last stable offset (LSO: the high watermark, or
// the first offset of the partition's oldest open transaction when that
// is lower), and its answer lists the aborted transactions whose data
// overlaps the batches returned (an empty list when none), from which
// the client drops their records; the control batches (markers) are
// returned as they lie in the log, as Kafka does. Every answer, for
// either isolation level, carries the LSO in last_stable_offset. A
// read_committed long poll is woken by the same signal as others
// (Logs.Appended): the LSO moves only when a marker is appended or the
// high watermark moves, and both signal. Replica fetches ignore the
// isolation level.
//
// Records a partition answers as FileRecords (Logs.Fetch's File) are not
// copied into the response: the response is encoded around them
// (fetch_files.go) and the connection's writer sends them from their file
// with sendfile(2), so a replica or consumer fetch costs no copy of the
// records through user memory on the leader.
//
// Authorization: a replica fetch (replica id >= 0) needs CLUSTER_ACTION
// on the cluster, else every partition answers TOPIC_AUTHORIZATION_FAILED
// and nothing is read or counted as the replica's (KafkaApis does the
// same); a consumer needs READ on each topic (TOPIC_AUTHORIZATION_FAILED
// for the partitions of one it may not read). With Options.ReplicaListener
// set, a replica fetch on any other listener is refused the same way,
// authorizer or not: followers dial the inter-broker listener, so one
// that arrives on a client listener is a client posing as a follower.
// With Options.ReplicaPrincipal (sluice.node.principal.pattern) a replica
// fetch must come from the claimed replica's own principal, so broker 2's
// credentials cannot fetch, and acknowledge, as broker 3.
//
// Fetch sessions (KIP-227, v7+; fetch_session.go): a full fetch at
// session epoch 0 opens a session when the cache has room
// (max.incremental.fetch.session.cache.slots) and its answer carries the
// session id; session epoch -1 fetches without one. An incremental fetch
// (the session's id and next epoch) carries only added or changed
// partitions and forgotten topics; every partition of the session is read
// (so a follower's fetch position counts on every fetch, as in Kafka) and
// the answer carries only those with news: records, an error, a diverging
// epoch, or a changed high watermark, last stable offset or log start
// offset. An unknown session id answers FETCH_SESSION_ID_NOT_FOUND, a
// wrong epoch INVALID_FETCH_SESSION_EPOCH, a session opened with topic
// names used with IDs (or back) FETCH_SESSION_TOPIC_ID_ERROR; the client
// then starts over with a full fetch.
func handleFetch(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	orig := r.body.(*kmsg.FetchRequest)
	resp := orig.ResponseKind().(*kmsg.FetchResponse)
	logs := s.broker.(Logs)
	sr := s.sessions.begin(time.Now(), orig)
	if sr.err != nil {
		resp.ErrorCode = sr.err.Code
		return resp, nil
	}
	// req is what to read: the request, or its session's partitions.
	req := orig
	if sr.session != nil || len(sr.topics) != len(orig.Topics) {
		cp := *orig
		cp.Topics = sr.topics
		req = &cp
	}
	if replica, _ := fetchReplica(req); replica < 0 && s.quotas != nil {
		// A consumer over consumer_byte_rate gets no data until its
		// throttle has passed (quotas.go). As in Kafka, an incremental
		// fetch's session moved on to its next epoch, and the answer
		// names it.
		if t := s.quotas.record(quorum.QuotaConsumerByteRate, r.principal, quotaClientID(r), 0, time.Now()); t > 0 {
			if sr.session != nil {
				resp.SessionID = sr.session.id
			}
			throttle(r, resp, t)
			return resp, nil
		}
	}
	maxBytes := int(req.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = int(^uint32(0) >> 1)
	}
	names := topicNames(s.broker, req)
	denied := fetchDenied(s, r, req, names)
	var deadline *time.Timer
	var files []fetchFile
	for {
		// Take the signal before reading: an append that lands after
		// the read closes it, so no wake-up is lost.
		appended := logs.Appended()
		total, failed := fetchOnce(ctx, logs, req, names, denied, resp, maxBytes, &files)
		if failed || total >= int(req.MinBytes) || req.MaxWaitMillis <= 0 {
			break
		}
		if deadline == nil {
			deadline = time.NewTimer(time.Duration(req.MaxWaitMillis) * time.Millisecond)
			defer deadline.Stop()
		}
		wait := BeginRemote(ctx)
		select {
		case <-appended:
			wait.End()
			continue
		case <-deadline.C:
		case <-ctx.Done():
		}
		wait.End()
		// One last read so the answer holds what arrived meanwhile.
		fetchOnce(ctx, logs, req, names, denied, resp, maxBytes, &files)
		break
	}
	// A follower's session is privileged in the cache; a replica fetch
	// refused (no CLUSTER_ACTION, a client listener) is not a follower's.
	replica, _ := fetchReplica(req)
	files = s.sessions.finish(time.Now(), req, &sr, resp, files, replica >= 0 && denied == nil)
	s.fetched(req, resp, files)
	emptyNotNull(resp) // file partitions too: their encoding ignores it
	if len(files) > 0 {
		return &fileFetchResponse{FetchResponse: resp, files: files}, nil
	}
	return resp, nil
}

// fetchDenied checks the request's authorization: a replica fetch
// needs CLUSTER_ACTION on the cluster (else every partition is
// refused), a consumer's READ on each topic. It returns which topics
// are refused, nil if none.
func fetchDenied(s *Server, r *request, req *kmsg.FetchRequest, names []string) []bool {
	replica, _ := fetchReplica(req)
	wrongListener := replica >= 0 && s.opts.ReplicaListener != "" && r.listener != s.opts.ReplicaListener
	if replica >= 0 && s.opts.ReplicaPrincipal != nil {
		if want := s.opts.ReplicaPrincipal(replica); want != "" && r.principal != want {
			s.authz.denied.Add(1)
			s.opts.Logger.Info("kafka: replica fetch refused: the principal is not the replica's (sluice.node.principal.pattern)",
				"principal", r.principal, "replica_id", replica, "want", want, "host", r.host, "listener", r.listener)
			wrongListener = true
		}
	}
	if !wrongListener && !s.Authorizing() {
		return nil
	}
	var denied []bool
	deny := func(i int) {
		if denied == nil {
			denied = make([]bool, len(req.Topics))
		}
		denied[i] = true
	}
	if replica >= 0 {
		if wrongListener || !s.clusterAllowed(r, kmsg.ACLOperationClusterAction) {
			for i := range req.Topics {
				deny(i)
			}
		}
		return denied
	}
	for i, name := range names {
		if name != "" && !s.allowed(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, name) {
			deny(i)
		}
	}
	return denied
}

// fetchReplica is the replica id and broker epoch a Fetch claims: from
// ReplicaState from v15 on, the replica id alone (epoch -1) before.
func fetchReplica(req *kmsg.FetchRequest) (int32, int64) {
	if req.Version >= 15 {
		return req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	return req.ReplicaID, -1
}

// topicNames names each of the request's topics: by ID from v13 on ("" for
// an unknown ID), as given before.
func topicNames(b Broker, req *kmsg.FetchRequest) []string {
	names := make([]string, len(req.Topics))
	for i, t := range req.Topics {
		if req.Version < 13 {
			names[i] = t.Topic
		} else if tn, ok := b.(TopicNames); ok {
			names[i], _ = tn.TopicName(t.TopicID)
		}
	}
	return names
}

// fetchOnce fills resp.Topics from one pass over the partitions and
// returns the record bytes found and whether any partition has an error.
// *files is set to the partitions answered with FileRecords; those of an
// earlier pass are released.
func fetchOnce(ctx context.Context, logs Logs, req *kmsg.FetchRequest, names []string, denied []bool, resp *kmsg.FetchResponse, maxBytes int, files *[]fetchFile) (total int, failed bool) {
	for _, f := range *files {
		f.f.Release()
	}
	*files = (*files)[:0]
	resp.Topics = resp.Topics[:0]
	replica, brokerEpoch := fetchReplica(req)
	readCommitted := req.IsolationLevel == 1 && replica < 0
	for ti, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = names[ti], t.TopicID // each encoded where its version has it
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			if denied != nil && denied[ti] {
				rp.ErrorCode, failed = kerr.TopicAuthorizationFailed.Code, true
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if names[ti] == "" && req.Version >= 13 {
				rp.ErrorCode, failed = kerr.UnknownTopicID.Code, true
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			room := min(int(p.PartitionMaxBytes), maxBytes-total)
			if total > 0 && room <= 0 {
				room = 0
			}
			fp := FetchPartition{Topic: names[ti], Partition: p.Partition, CurrentLeaderEpoch: p.CurrentLeaderEpoch,
				Offset: p.FetchOffset, MaxBytes: max(room, 1), ReplicaID: replica, BrokerEpoch: brokerEpoch,
				LastFetchedEpoch: p.LastFetchedEpoch, ReadCommitted: readCommitted}
			if req.Version < 12 {
				fp.LastFetchedEpoch = -1
			}
			if req.Version >= 11 && replica < 0 {
				fp.AnyReplica, fp.ClientRack = true, req.Rack
			}
			res := logs.Fetch(ctx, fp)
			if res.File != nil && (res.Err != nil || res.Diverging != nil || res.Redirect || room <= 0 && total > 0 || res.File.Len() == 0) {
				res.File.Release()
				res.File = nil
			}
			rp.ErrorCode = quorum.ErrorCode(res.Err)
			switch {
			case res.Err != nil:
				failed = true
			case res.Redirect:
				// The consumer fetches from its rack's replica: answer now.
				failed = true
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
				rp.PreferredReadReplica = res.PreferredReadReplica
			case res.Diverging != nil:
				// The follower must truncate before it fetches on:
				// answer now.
				failed = true
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
				rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = res.Diverging.Epoch, res.Diverging.EndOffset
			default:
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
				if readCommitted {
					rp.AbortedTransactions = abortedTxns(res.Aborted)
				}
				switch {
				case res.File != nil:
					*files = append(*files, fetchFile{topic: len(resp.Topics), partition: len(rt.Partitions), f: res.File})
					total += res.File.Len()
				case room > 0 || total == 0:
					rp.RecordBatches = res.Records
					total += len(res.Records)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return total, failed
}

// abortedTxns is a read_committed answer's aborted transactions: never
// null (Kafka sends an empty list when none).
func abortedTxns(aborted []AbortedTxn) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	if len(aborted) == 0 {
		return []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	}
	out := make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(aborted))
	for i, a := range aborted {
		out[i] = kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		out[i].ProducerID, out[i].FirstOffset = a.ProducerID, a.FirstOffset
	}
	return out
}

// emptyNotNull gives every partition without records an empty record set
// rather than null (size -1): the schema allows null, but librdkafka (kcat)
// refuses it ("invalid MessageSetSize -1") and backs off, so a consumer at
// the log end never sees its end; Kafka always sends an empty set.
func emptyNotNull(resp *kmsg.FetchResponse) {
	for i := range resp.Topics {
		ps := resp.Topics[i].Partitions
		for j := range ps {
			if ps[j].RecordBatches == nil {
				ps[j].RecordBatches = []byte{}
			}
		}
	}
}
