// Package group is the consumer group coordinator's state machine (Kafka's
// GroupCoordinator / GroupMetadataManager for the classic protocol, and the
// committed offsets): the groups whose coordinator is one partition of the
// internal topic __consumer_offsets, and the records that persist them. It
// does no I/O and has no goroutines, sockets or clocks, like partition/:
// requests go in through Step, the clock through TickTo, decisions come out
// through Ready, and the driver (node/) appends the records to the offsets
// partition, answers the clients and calls Appended.
//
// # The loop the driver runs
//
// One Shard per __consumer_offsets partition this node leads, under one
// lock:
//
//	s := group.NewShard(partition, cfg)
//	for each record of the partition from its log start to its high watermark:
//		s.Replay(offset, key, value)          // loading: requests get COORDINATOR_LOAD_IN_PROGRESS
//	s.LoadDone(now)
//	...
//	s.TickTo(now); s.Step(now, group.Request{ID: id, Body: req, ...})
//	rd := s.Ready()
//	// 1. rd.Appends: append each to the partition, acks=all, in order;
//	//    when committed (or failed) call s.Appended(now, a.ID, err)
//	// 2. rd.Responses: answer the waiting clients
//	// wake again at s.NextDue() (TickTo) or on the next request
//
// When this node stops leading the partition the driver drops the Shard
// and answers every request still waiting NOT_COORDINATOR.
//
// See api.go for the contract of each method. Records are Kafka's
// __consumer_offsets schemas (kmsg.OffsetCommitKey/Value,
// kmsg.GroupMetadataKey/Value), so tooling that reads that topic decodes
// them.
package group
