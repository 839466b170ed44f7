// Package partition is one partition replica's replication state machine:
// role, leader epoch, log end offset, high watermark, ISR and the produce
// requests waiting for acknowledgements. See the full contract below.
package partition
