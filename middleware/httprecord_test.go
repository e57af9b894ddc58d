package middleware

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/zerolock/zerolock/internal/replay"
)

func TestReplayableHeader(t *testing.T) {
	h := http.Header{
		"Content-Type":       {"application/json"},
		"X-Payment-Id":       {"p-1"},
		"X-Multi":            {"a", "b"},
		"Set-Cookie":         {"session=1"},
		"Connection":         {"keep-alive, X-Hop"},
		"X-Hop":              {"1"},
		"Keep-Alive":         {"timeout=5"},
		"Content-Length":     {"12"},
		"Transfer-Encoding":  {"chunked"},
		"Trailer":            {"X-Sum"},
		"Upgrade":            {"h2c"},
		"Te":                 {"trailers"},
		"Proxy-Authenticate": {"Basic"},
		"Trailer:X-Late":     {"1"},
		"x-lower":            {"kept, canonical"},
	}
	want := http.Header{
		"Content-Type": {"application/json"},
		"X-Payment-Id": {"p-1"},
		"X-Multi":      {"a", "b"},
		"X-Lower":      {"kept, canonical"},
	}
	if got := replayableHeader(h); !reflect.DeepEqual(got, want) {
		t.Fatalf("replayableHeader = %v, want %v", got, want)
	}
}

func TestStoredResponseRoundTrip(t *testing.T) {
	for _, sr := range []storedResponse{
		{status: 200, header: http.Header{}, body: []byte{}},
		{status: 201, header: http.Header{"Content-Type": {"application/json"}, "X-Multi": {"a", "", "b"}}, body: []byte(`{"id":1}`)},
		{status: 404, header: http.Header{}, body: []byte(strings.Repeat("x", 5000))},
	} {
		payload, ok := sr.encode()
		if !ok {
			t.Fatal("encode refused a small response")
		}
		got, err := decodeStoredResponse(payload)
		if err != nil || !reflect.DeepEqual(got, sr) {
			t.Fatalf("decode(encode(%v)) = %v, %v", sr, got, err)
		}
		for cut := 0; cut < len(payload); cut++ {
			if _, err := decodeStoredResponse(payload[:cut]); !errors.Is(err, replay.ErrBadRecord) {
				t.Fatalf("decode of %d of %d bytes: %v, want ErrBadRecord", cut, len(payload), err)
			}
		}
		if _, err := decodeStoredResponse(append(payload, 0)); !errors.Is(err, replay.ErrBadRecord) {
			t.Fatalf("decode with a trailing byte: %v, want ErrBadRecord", err)
		}
	}
	huge := storedResponse{status: 200, header: http.Header{"X-Big": {strings.Repeat("v", maxStoredHeaderBytes)}}}
	if _, ok := huge.encode(); ok {
		t.Fatal("encode kept headers over maxStoredHeaderBytes")
	}
}

// FuzzHTTPRecord: no stored value, however corrupt, makes decoding panic
// or succeed with something net/http could not send, and every response
// the middleware stores decodes to itself. The seeds run under go test.
func FuzzHTTPRecord(f *testing.F) {
	good, _ := storedResponse{status: 201, header: http.Header{"Content-Type": {"application/json"}}, body: []byte(`{"id":1}`)}.encode()
	f.Add(good, uint16(201), "Content-Type", "application/json", []byte(`{"id":1}`))
	f.Add(replay.Encode(replay.Record{Kind: kindHTTP, Payload: good}), uint16(0), "X-A", "", []byte{})
	f.Add([]byte{0xc9, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f}, uint16(99), "Bad Name", "a\r\nb", []byte(nil))
	f.Add([]byte{}, uint16(799), "", "\x00", []byte{0})
	f.Fuzz(func(t *testing.T, data []byte, status uint16, name, value string, body []byte) {
		if sr, err := decodeStoredResponse(data); err == nil {
			if sr.status < 200 || sr.status > 999 {
				t.Fatalf("decoded status %d", sr.status)
			}
			for k, vs := range sr.header {
				for _, v := range vs {
					if !validFieldName([]byte(k)) || !validFieldValue([]byte(v)) {
						t.Fatalf("decoded header %q: %q", k, v)
					}
				}
			}
			again, ok := storedResponse{status: sr.status, header: sr.header, body: sr.body}.encode()
			if back, err := decodeStoredResponse(again); ok && (err != nil || !reflect.DeepEqual(back, sr)) {
				t.Fatalf("re-encoding %v decodes to %v, %v", sr, back, err)
			}
		} else if !errors.Is(err, replay.ErrBadRecord) {
			t.Fatalf("error %v does not wrap ErrBadRecord", err)
		}
		if rec, err := replay.Decode(data, 1<<16); err == nil {
			_, _ = decodeStoredResponse(rec.Payload)
		}

		h := http.Header{}
		if validFieldName([]byte(name)) && validFieldValue([]byte(value)) {
			h.Add(name, value)
		}
		if body == nil {
			body = []byte{}
		}
		sr := storedResponse{status: 200 + int(status)%800, header: replayableHeader(h), body: body}
		payload, ok := sr.encode()
		if !ok {
			t.Fatal("encode refused a small response")
		}
		rec, err := replay.Decode(replay.Encode(replay.Record{Kind: kindHTTP, Payload: payload}), len(payload))
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeStoredResponse(rec.Payload)
		if err != nil || !reflect.DeepEqual(back, sr) {
			t.Fatalf("round trip of %v: %v, %v", sr, back, err)
		}
	})
}

// The capture writer holds what net/http would send: the header as of
// WriteHeader, the first status, no body where the status allows none.
func TestCaptureWriter(t *testing.T) {
	rec := httptest.NewRecorder()
	c := newCaptureWriter(rec, 1024)
	c.Header().Set("X-Before", "1")
	c.WriteHeader(http.StatusAccepted)
	c.WriteHeader(http.StatusTeapot) // superfluous
	c.Header().Set("X-After", "1")
	_, _ = c.Write([]byte("held"))
	if rec.Body.Len() != 0 || c.finalStatus() != http.StatusAccepted {
		t.Fatalf("wrote %q, status %d before writeOut", rec.Body.String(), c.finalStatus())
	}
	if got := c.sentHeader(); got.Get("X-Before") != "1" || got.Get("X-After") != "" {
		t.Fatalf("sent header %v, want the header as of WriteHeader", got)
	}
	c.writeOut()
	if rec.Code != http.StatusAccepted || rec.Body.String() != "held" || rec.Header().Get("X-Before") != "1" {
		t.Fatalf("written %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}

	c = newCaptureWriter(httptest.NewRecorder(), 1024)
	c.WriteHeader(http.StatusNoContent)
	if _, err := c.Write([]byte("x")); !errors.Is(err, http.ErrBodyNotAllowed) {
		t.Fatalf("body on 204: %v, want ErrBodyNotAllowed", err)
	}
}
