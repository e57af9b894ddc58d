package middleware

import (
	"fmt"
	"net/http"
	"net/textproto"
	"sort"
	"strings"

	"github.com/zerolock/zerolock/internal/replay"
)

// kindHTTP marks a stored HTTP response in the replay envelope.
const kindHTTP = 'h'

// maxStoredHeaderBytes bounds the encoded headers of a kept response, on
// top of its body's MaxResponseBytes: a response with more is not kept,
// and a stored value with more is not read.
const maxStoredHeaderBytes = 64 << 10

// storedResponse is a completed response as replay mode keeps it.
type storedResponse struct {
	status int
	header http.Header // only replayable fields (replayableHeader)
	body   []byte
}

// hopByHop are the fields that describe one connection, not the response,
// and Content-Length, which net/http recomputes from the body it is given.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true,
}

// replayableHeader returns the fields of h that a retry gets: not
// Set-Cookie (a session handed to whoever presents the key), not the
// hop-by-hop ones nor those that Connection names, not trailers.
func replayableHeader(h http.Header) http.Header {
	drop := make(map[string]bool)
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			drop[textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name))] = true
		}
	}
	out := make(http.Header, len(h))
	for name, values := range h {
		canon := textproto.CanonicalMIMEHeaderKey(name)
		if hopByHop[canon] || drop[canon] || canon == "Set-Cookie" ||
			strings.HasPrefix(name, http.TrailerPrefix) || len(values) == 0 {
			continue
		}
		out[canon] = append(out[canon], values...)
	}
	return out
}

// encode is the payload of the replay envelope: the status, the number of
// header fields, each field's name and value (a name once per value, in
// name order), then the body. It reports false when the headers are over
// maxStoredHeaderBytes.
func (sr storedResponse) encode() ([]byte, bool) {
	names := make([]string, 0, len(sr.header))
	size, fields := 0, 0
	for name, values := range sr.header {
		names = append(names, name)
		for _, v := range values {
			size += len(name) + len(v) + 4
			fields++
		}
	}
	if size > maxStoredHeaderBytes {
		return nil, false
	}
	sort.Strings(names)
	b := make([]byte, 0, 16+size+len(sr.body))
	b = replay.AppendUvarint(b, uint64(sr.status))
	b = replay.AppendUvarint(b, uint64(fields))
	for _, name := range names {
		for _, v := range sr.header[name] {
			b = replay.AppendBytes(b, []byte(name))
			b = replay.AppendBytes(b, []byte(v))
		}
	}
	return replay.AppendBytes(b, sr.body), true
}

// decodeStoredResponse reads encode's payload. Anything that net/http
// would refuse to send, or that encode never writes, is an error wrapping
// replay.ErrBadRecord: a status outside 200-999, a field name that is not
// an HTTP token, a value with a control character, a truncated or
// overlong payload.
func decodeStoredResponse(b []byte) (storedResponse, error) {
	// A read past the end returns zero values and is reported by the
	// final Err; the checks between the reads only refuse what a zero
	// value would make of it (status 0, an empty name).
	r := replay.NewReader(b)
	status := r.Uvarint()
	fields := r.Uvarint()
	if status < 200 || status > 999 {
		return storedResponse{}, fmt.Errorf("%w: status %d", replay.ErrBadRecord, status)
	}
	// Each field takes two bytes at least: a count beyond that is garbage,
	// and must not size an allocation.
	if fields > uint64(len(b)/2) {
		return storedResponse{}, fmt.Errorf("%w: %d header fields in %d bytes", replay.ErrBadRecord, fields, len(b))
	}
	sr := storedResponse{status: int(status), header: make(http.Header, fields)}
	for i := uint64(0); i < fields; i++ {
		name, value := r.Bytes(), r.Bytes()
		if !validFieldName(name) || !validFieldValue(value) {
			return storedResponse{}, fmt.Errorf("%w: header field %d is not valid HTTP", replay.ErrBadRecord, i)
		}
		key := textproto.CanonicalMIMEHeaderKey(string(name))
		sr.header[key] = append(sr.header[key], string(value))
	}
	sr.body = r.Bytes()
	if err := r.Err(); err != nil {
		return storedResponse{}, err
	}
	return sr, nil
}

// validFieldName reports whether name is an HTTP token (RFC 9110 5.1).
func validFieldName(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if c >= 0x80 || !tokenChar[c] {
			return false
		}
	}
	return true
}

// validFieldValue reports whether v has no control character but tab.
func validFieldValue(v []byte) bool {
	for _, c := range v {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

var tokenChar = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()
