package resttest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Result is one answered request: its status, headers and whole body.
type Result struct {
	Status int
	Header http.Header
	Body   string
}

// Do sends a request with body (as JSON when it is not empty) and the
// headers given as name, value pairs, and reads the whole answer; see
// Send for the errors.
func Do(tb testing.TB, method, url, body string, headers ...string) Result {
	tb.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return Send(tb, req)
}

// Send sends req with http.DefaultClient and reads the whole answer. When
// the request fails it marks the test failed (with Error, so that it may
// run in a goroutine of the test) and returns the zero Result.
func Send(tb testing.TB, req *http.Request) Result {
	tb.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Error(err)
		return Result{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return Result{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}
