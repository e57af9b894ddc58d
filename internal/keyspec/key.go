package keyspec

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"strings"
	"sync"
)

// Kind tags a value in the encoding, so that values of different kinds
// that print alike (the string "1", the number 1) never collide.
type Kind byte

// The kinds of value a key can carry.
const (
	String Kind = 's'
	Number Kind = 'n'
	Bool   Kind = 'b'
	Bytes  Kind = 'y'
	JSON   Kind = 'j' // a JSON object or array in canonical form
	Null   Kind = 'z'
)

// A Hasher accumulates values in order and yields the key. The zero value
// is not ready; use NewHasher. A Hasher is not safe for concurrent use.
type Hasher struct {
	h       hash.Hash
	buf     [9]byte
	scratch []byte
}

var hasherPool = sync.Pool{New: func() any { return &Hasher{h: sha256.New()} }}

// NewHasher returns a Hasher from a pool; Key returns it to the pool.
func NewHasher() *Hasher {
	return hasherPool.Get().(*Hasher)
}

// Add appends one value: its kind, its length as 8 bytes, then its bytes.
func (hs *Hasher) Add(kind Kind, value []byte) {
	hs.buf[0] = byte(kind)
	binary.BigEndian.PutUint64(hs.buf[1:], uint64(len(value)))
	hs.h.Write(hs.buf[:])
	hs.h.Write(value)
}

// AddString is Add for a string value.
func (hs *Hasher) AddString(kind Kind, value string) {
	hs.buf[0] = byte(kind)
	binary.BigEndian.PutUint64(hs.buf[1:], uint64(len(value)))
	hs.h.Write(hs.buf[:])
	if len(value) > maxScratch {
		hs.h.Write([]byte(value)) // rare: not worth keeping a large buffer pooled
		return
	}
	hs.scratch = append(hs.scratch[:0], value...)
	hs.h.Write(hs.scratch)
}

// maxScratch bounds the buffer a pooled Hasher keeps for strings.
const maxScratch = 1024

// Discard returns a Hasher whose key is not wanted to the pool.
func (hs *Hasher) Discard() {
	hs.h.Reset()
	hasherPool.Put(hs)
}

// Sum returns the SHA-256 of the values added, and releases the Hasher.
// Replay mode fingerprints requests with it.
func (hs *Hasher) Sum() [sha256.Size]byte {
	var sum [sha256.Size]byte
	hs.h.Sum(sum[:0])
	hs.Discard()
	return sum
}

// Key returns the namespace parts joined by ':' followed by the hex SHA-256
// of the values added, and releases the Hasher.
func (hs *Hasher) Key(namespace ...string) string {
	sum := hs.Sum()

	var b strings.Builder
	n := hex.EncodedLen(len(sum))
	for _, part := range namespace {
		n += len(part) + 1
	}
	b.Grow(n)
	for _, part := range namespace {
		b.WriteString(part)
		b.WriteByte(':')
	}
	var hexSum [2 * sha256.Size]byte
	hex.Encode(hexSum[:], sum[:])
	b.Write(hexSum[:])
	return b.String()
}

// Digest is a short, loggable identifier of a key: its last 16 hex digits.
// Logs carry it instead of raw request values.
func Digest(key string) string {
	if len(key) <= 16 {
		return key
	}
	return key[len(key)-16:]
}
