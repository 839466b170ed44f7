package kafka

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkResponse panics if frame, the encoded answer to r, is not a response a
// client can read back: wrong size prefix or correlation id, another API or
// version than asked, or a body that does not decode. It runs only with the
// invariants build tag.
func checkResponse(frame []byte, r *request, resp kmsg.Response) {
	fail := func(format string, args ...any) {
		panic(fmt.Sprintf("kafka: invariant: response to %s v%d (correlation id %d): %s",
			kmsg.NameForKey(r.key), r.version, r.correlationID, fmt.Sprintf(format, args...)))
	}
	if resp.Key() != r.key {
		fail("answered with key %d", resp.Key())
	}
	wantVersion := r.version
	if r.body == nil { // unsupported ApiVersions version: answered at v0
		wantVersion = 0
	}
	if resp.GetVersion() != wantVersion {
		fail("answered at version %d", resp.GetVersion())
	}
	if len(frame) < 8 || int(binary.BigEndian.Uint32(frame)) != len(frame)-4 {
		fail("size prefix does not match %d bytes", len(frame))
	}
	if corr := int32(binary.BigEndian.Uint32(frame[4:])); corr != r.correlationID {
		fail("correlation id %d", corr)
	}
	body := frame[8:]
	if resp.IsFlexible() && r.key != kmsg.ApiVersions.Int16() {
		if len(body) == 0 || body[0] != 0 {
			fail("flexible response header lacks its empty tag section")
		}
		body = body[1:]
	}
	back := kmsg.ResponseForKey(r.key)
	back.SetVersion(resp.GetVersion())
	if err := back.ReadFrom(body); err != nil {
		fail("does not decode: %v", err)
	}
}

// checkFileResponse is checkResponse for a Fetch frame whose files go into
// buf at pieces: it also panics if the frame, files read in, differs from
// kmsg's encoding of the same response.
func checkFileResponse(buf []byte, pieces []filePiece, r *request, resp *fileFetchResponse) {
	var frame []byte
	prev := 0
	for _, p := range pieces {
		frame = append(frame, buf[prev:p.at]...)
		prev = p.at
		var err error
		if frame, err = p.f.AppendTo(frame); err != nil {
			return // the writer meets the same error and closes the connection
		}
	}
	frame = append(frame, buf[prev:]...)
	checkResponse(frame, r, resp)
	for _, f := range resp.files {
		p := &resp.Topics[f.topic].Partitions[f.partition]
		p.RecordBatches, _ = f.f.AppendTo(nil)
	}
	want := appendResponse(nil, r.correlationID, resp.FetchResponse)
	for _, f := range resp.files {
		resp.Topics[f.topic].Partitions[f.partition].RecordBatches = nil
	}
	if !bytes.Equal(frame, want) {
		panic(fmt.Sprintf("kafka: invariant: Fetch v%d response (correlation id %d) encoded around its files differs from kmsg's encoding", r.version, r.correlationID))
	}
}
