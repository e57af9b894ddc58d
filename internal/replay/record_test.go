package replay

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	fp := [FingerprintSize]byte{1, 2, 3}
	for _, payload := range [][]byte{nil, []byte("short"), bytes.Repeat([]byte(`{"id":"p-1","amount":5}`), 200)} {
		for _, unreplayable := range []bool{false, true} {
			in := Record{Kind: 'h', Fingerprint: fp, Unreplayable: unreplayable, Payload: payload}
			enc := Encode(in)
			out, err := Decode(enc, 1<<20)
			if err != nil {
				t.Fatalf("Decode(Encode(%d bytes)) = %v", len(payload), err)
			}
			if out.Kind != in.Kind || out.Fingerprint != in.Fingerprint || out.Unreplayable != unreplayable || !bytes.Equal(out.Payload, payload) {
				t.Fatalf("round trip changed the record: %+v", out)
			}
			if len(payload) > compressAbove && len(enc) >= len(payload) {
				t.Fatalf("a %d-byte repetitive payload was stored in %d bytes: not compressed", len(payload), len(enc))
			}
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	good := Encode(Record{Kind: 'g', Payload: []byte(strings.Repeat("x", 4096))})
	future := append([]byte{}, good...)
	future[0] = version + 1
	flags := append([]byte{}, good...)
	flags[1] |= 0x80
	for name, b := range map[string][]byte{
		"empty":           nil,
		"token":           []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
		"future version":  future,
		"unknown flags":   flags,
		"truncated flate": good[:len(good)-3],
	} {
		if _, err := Decode(b, 1<<20); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: Decode = %v, want ErrBadRecord", name, err)
		}
	}
	if _, err := Decode(good, 100); !errors.Is(err, ErrBadRecord) {
		t.Errorf("a payload over the limit decoded: %v", err)
	}
}

// FuzzDecode: any value in the key decodes to a record or to an error
// wrapping ErrBadRecord, never a panic; what decodes re-encodes to a value
// that decodes to the same record.
func FuzzDecode(f *testing.F) {
	f.Add(Encode(Record{Kind: 'h', Payload: []byte("body")}))
	f.Add(Encode(Record{Kind: 'g', Unreplayable: true, Payload: bytes.Repeat([]byte("ab"), 600)}))
	f.Add([]byte{1, 1, 'h'})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b, 1<<16)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("Decode error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		again, err := Decode(Encode(r), 1<<16)
		if err != nil || again.Kind != r.Kind || again.Fingerprint != r.Fingerprint ||
			again.Unreplayable != r.Unreplayable || !bytes.Equal(again.Payload, r.Payload) {
			t.Fatalf("re-encoding changed the record: %v", err)
		}
		rd := NewReader(r.Payload)
		rd.Uvarint()
		rd.Bytes()
		_ = rd.Err()
	})
}

// BenchmarkEncodeDecode: one stored 1 KiB JSON response, as replay mode
// writes and reads it; -benchmem shows what a record costs the heap.
func BenchmarkEncodeDecode(b *testing.B) {
	payload := bytes.Repeat([]byte(`{"paymentId":"pay-1","amount":500},`), 30)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(Encode(Record{Kind: 'h', Payload: payload}), 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}
