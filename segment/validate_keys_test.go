package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// keyedRec encodes one record with key (nil: a null key) and value.
func keyedRec(offDelta int64, key, value []byte) []byte {
	r := []byte{0}
	r = binary.AppendVarint(r, 0)
	r = binary.AppendVarint(r, offDelta)
	if key == nil {
		r = binary.AppendVarint(r, -1)
	} else {
		r = binary.AppendVarint(r, int64(len(key)))
		r = append(r, key...)
	}
	r = binary.AppendVarint(r, int64(len(value)))
	r = append(r, value...)
	r = binary.AppendVarint(r, 0)
	return append(binary.AppendVarint(nil, int64(len(r))), r...)
}

// TestAppendRequiresKeys: with SetKeysRequired (a compacted topic) the
// leader refuses a batch holding a record with a null key, whatever the
// codec and wherever the record sits (one longer than the stream buffer
// included), and takes empty keys and tombstones (null values); without
// it, null keys are fine; a follower's AppendReplicated never checks.
func TestAppendRequiresKeys(t *testing.T) {
	now := validateNow.UnixMilli()
	big := bytes.Repeat([]byte("v"), 2*streamBuffer)
	batch := func(nullAt int) []byte {
		var body []byte
		for i := range 5 {
			key := []byte(fmt.Sprintf("k%d", i))
			switch {
			case i == nullAt:
				key = nil
			case i == 3:
				key = []byte{} // empty: still a key
			}
			value := []byte("v")
			switch i {
			case 1:
				value = nil // a tombstone
			case 4:
				value = big
			}
			body = append(body, keyedRec(int64(i), key, value)...)
		}
		return rawBatch(0, 5, now, now, body)
	}
	l, _ := newEnv(t, vfs.NewMem()).open(Options{Now: func() time.Time { return validateNow }})
	defer l.Close()
	codecs := map[string]int{"none": codecNone, "gzip": codecGzip, "snappy": codecSnappy, "xerial-snappy": -codecSnappy, "lz4": codecLz4, "zstd": codecZstd}
	for name, codec := range codecs {
		l.SetKeysRequired(true)
		if _, err := l.Append(withCodec(t, batch(-1), codec), 0); err != nil {
			t.Errorf("%s: every record keyed: %v", name, err)
		}
		for _, at := range []int{0, 2, 4} {
			leo := l.LogEndOffset()
			_, err := l.Append(withCodec(t, batch(at), codec), 0)
			if !errors.Is(err, ErrInvalidRecord) || l.LogEndOffset() != leo {
				t.Errorf("%s: null key at record %d: %v (log end %d -> %d), want ErrInvalidRecord and nothing written", name, at, err, leo, l.LogEndOffset())
			}
			if err != nil && !bytes.Contains([]byte(err.Error()), []byte("cleanup.policy=compact")) {
				t.Errorf("%s: the error does not say why: %v", name, err)
			}
			if _, err := appendTrusted(l, withCodec(t, batch(at), codec), 0); err != nil {
				t.Errorf("%s: a follower's append of a null key: %v", name, err)
			}
		}
		l.SetKeysRequired(false)
		if _, err := l.Append(withCodec(t, batch(2), codec), 0); err != nil {
			t.Errorf("%s: null key, keys not required: %v", name, err)
		}
	}
}
