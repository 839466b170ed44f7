// Package powerfs is a pebble vfs.FS that lets the soak tool simulate a
// power loss on a real node process: it passes every operation through to
// the wrapped filesystem (the real disk) and appends, to a journal file,
// what each operation made durable. Recover, run after the node has been
// SIGKILLed and before it restarts, replays the journal and throws away
// everything that was not durable.
//
// # The journal
//
// One line per event, tab separated, appended with one write(2) each:
//
//	C path          file created (its directory entry is not yet durable)
//	O path size     existing file opened for writing at size (durable then,
//	                when it is the first line naming path: a reopen later
//	                in the run proves nothing)
//	S path size     fsync of the file returned: the first size bytes are durable
//	R old new       rename (durable once new's directory is synced)
//	D dir           fsync of a directory: its entries are durable
//	X path          removal
//
// The size of an S line is taken before the fsync starts, so a write racing
// with the fsync counts as lost (conservative).
//
// # What Recover simulates
//
//   - Every file is cut back to the length its last fsync covered (0 for a
//     file never synced): the page-cache tail the kernel would have lost.
//   - A file whose creation was never made durable by a directory fsync is
//     removed; a rename never made durable is undone (the file goes back to
//     its old name, if that name was durable, else it is removed).
//   - Nothing survives unless fsynced: the kernel's periodic writeback
//     (vm.dirty_*) is assumed never to have run, the worst case.
//
// # What it does not simulate
//
//   - Overwrites in place inside the synced prefix keep their new bytes
//     (old contents are not kept). Segment files are append-only; Pebble's
//     recycled WAL files are overwritten in place and so keep unsynced data.
//   - Removals are durable at once (the file is gone; a power loss cannot
//     bring it back here).
//   - Torn or reordered writes inside a page, and sync_file_range (SyncTo
//     without a full sync) is never counted as durable.
//   - Only the FS handed to the node (node.Options.FS: partition logs and
//     their Pebble index) is wrapped. Raft's bolt store, snapshots and
//     meta.properties are written directly and are not cut.
//   - An fsync that returned but whose journal line the SIGKILL beat is
//     treated as not done (conservative).
//
// RecoverWith shows each file to a hook just before its bytes go (path,
// synced length, size): the soak reads the record batches there to learn
// which offsets the power loss dropped.
//
// A SIGKILL alone loses nothing: the kernel keeps the page cache of a killed
// process, which is exactly why Recover must be run explicitly.
package powerfs
