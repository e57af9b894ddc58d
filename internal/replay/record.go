// Package replay is the stored form of a completed request's result, which
// the REST middleware and the gRPC interceptor keep in place of the lock in
// replay mode and hand to retries. Each transport encodes its own payload
// (an HTTP response, a gRPC reply or status); this package wraps it in a
// versioned envelope with the request's fingerprint, compressed when that
// pays, and decodes it defensively: a corrupt or foreign value is an error
// wrapping ErrBadRecord, never a panic or a wrong replay.
package replay

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrBadRecord is wrapped by every error Decode returns.
var ErrBadRecord = errors.New("replay: not a valid stored result")

// version is the envelope's format. A later format gets a new number; a
// reader that meets a version it does not know refuses it (ErrBadRecord).
const version = 1

// Flags of the envelope.
const (
	flagCompressed   = 1 << 0
	flagUnreplayable = 1 << 1
)

// FingerprintSize is the length of a request fingerprint: a SHA-256.
const FingerprintSize = 32

// compressAbove is the payload size from which Encode tries flate. Below
// it the header and dictionary cost more than they save.
const compressAbove = 512

// headerSize is version, flags, kind and the fingerprint.
const headerSize = 3 + FingerprintSize

// A flate writer allocates its hash tables (hundreds of KiB) once; the
// pools keep them across records instead of per stored response.
var (
	writers = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.BestSpeed) // the level is valid
		return w
	}}
	readers = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}
)

// A Record is a stored result.
type Record struct {
	// Kind says which transport's payload this is ('h' HTTP, 'g' gRPC), so
	// a key shared by mistake never replays one as the other.
	Kind byte
	// Fingerprint identifies the request whose result this is: a retry with
	// another fingerprint is a different request under the same key.
	Fingerprint [FingerprintSize]byte
	// Unreplayable marks a result that could not be kept (too large,
	// streamed): retries are refused until the record expires.
	Unreplayable bool
	// Payload is the transport's encoding of the result.
	Payload []byte
}

// Encode returns r's stored form, compressing the payload when that makes
// it smaller.
func Encode(r Record) []byte {
	payload, flags := r.Payload, byte(0)
	if r.Unreplayable {
		flags |= flagUnreplayable
	}
	if len(payload) > compressAbove {
		var buf bytes.Buffer
		w := writers.Get().(*flate.Writer)
		w.Reset(&buf)
		_, _ = w.Write(payload) // a bytes.Buffer never fails
		_ = w.Close()
		writers.Put(w)
		if buf.Len() < len(payload) {
			payload, flags = buf.Bytes(), flags|flagCompressed
		}
	}
	out := make([]byte, headerSize, headerSize+len(payload))
	out[0], out[1], out[2] = version, flags, r.Kind
	copy(out[3:], r.Fingerprint[:])
	return append(out, payload...)
}

// Decode reads a stored form. maxPayload bounds the decoded payload, so a
// corrupt or hostile compressed value cannot expand without limit. Every
// error wraps ErrBadRecord.
func Decode(b []byte, maxPayload int) (Record, error) {
	if len(b) < headerSize {
		return Record{}, fmt.Errorf("%w: %d bytes, shorter than its header", ErrBadRecord, len(b))
	}
	if b[0] != version {
		return Record{}, fmt.Errorf("%w: format version %d (this build reads %d)", ErrBadRecord, b[0], version)
	}
	flags := b[1]
	if flags&^(flagCompressed|flagUnreplayable) != 0 {
		return Record{}, fmt.Errorf("%w: unknown flags %#x", ErrBadRecord, flags)
	}
	r := Record{Kind: b[2], Unreplayable: flags&flagUnreplayable != 0}
	copy(r.Fingerprint[:], b[3:headerSize])
	payload := b[headerSize:]
	if flags&flagCompressed != 0 {
		zr := readers.Get().(io.ReadCloser)
		_ = zr.(flate.Resetter).Reset(bytes.NewReader(payload), nil) // never fails for flate
		defer readers.Put(zr)
		var err error
		payload, err = io.ReadAll(io.LimitReader(zr, int64(maxPayload)+1))
		if err != nil {
			return Record{}, fmt.Errorf("%w: compressed payload: %v", ErrBadRecord, err)
		}
	}
	if len(payload) > maxPayload {
		return Record{}, fmt.Errorf("%w: payload over %d bytes", ErrBadRecord, maxPayload)
	}
	r.Payload = payload
	return r, nil
}

// Reader reads the length-prefixed fields of a payload, remembering the
// first error, so that a transport's decoder is a straight sequence of
// reads followed by one check of Err.
type Reader struct {
	b   []byte
	err error
}

// NewReader reads b.
func NewReader(b []byte) *Reader {
	return &Reader{b: b}
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: truncated number", ErrBadRecord)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Bytes reads a length-prefixed byte string; the result aliases the input.
func (r *Reader) Bytes() []byte {
	n := r.Uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: field of %d bytes, %d left", ErrBadRecord, n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// Err is the first error, or one for bytes left unread.
func (r *Reader) Err() error {
	if r.err == nil && len(r.b) > 0 {
		return fmt.Errorf("%w: %d bytes after the last field", ErrBadRecord, len(r.b))
	}
	return r.err
}

// AppendUvarint appends an unsigned varint.
func AppendUvarint(b []byte, v uint64) []byte {
	return binary.AppendUvarint(b, v)
}

// AppendBytes appends a length-prefixed byte string.
func AppendBytes(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}
