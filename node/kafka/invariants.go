package kafka

import (
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
