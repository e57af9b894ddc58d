package middleware_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/internal/testing/readmetest"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// readmeDtmConf loads the REST rule of the README's "With dtm", which
// README-cn.md must show too (LoadYAMLSame).
func readmeDtmConf(t *testing.T) middleware.LockConf {
	t.Helper()
	var c struct{ Lock middleware.LockConf }
	readmetest.LoadYAMLSame(t, "..", "query:gid", &c)
	if len(c.Lock.Rules) != 1 {
		t.Fatalf("the README's rule for dtm over HTTP: %d rules, want one", len(c.Lock.Rules))
	}
	return c.Lock
}

// dtmCall is a request dtm's server sends to an HTTP branch (getHTTPResult
// in dtm's dtmsvr/trans_status.go): the branch's payload as a JSON body,
// with gid, trans_type, branch_id and op as query parameters.
func dtmCall(t *testing.T, base, path, gid, branchID, op, payload string) resttest.Result {
	t.Helper()
	q := url.Values{"gid": {gid}, "trans_type": {"saga"}, "branch_id": {branchID}, "op": {op}}
	req, err := http.NewRequest(http.MethodPost, base+path+"?"+q.Encode(), strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-type", "application/json")
	return resttest.Send(t, req)
}

// TestDtmBranchRunsOnceOverHTTP: under the README's REST rule for dtm, a
// branch that dtm calls again while its first attempt runs gets 425 Too
// Early (dtm's "ongoing", retried later, where 409 would roll the global
// transaction back) with Retry-After; a call after the attempt ended gets
// its answer, replayed; the branch runs once. Its compensation is another
// key and runs.
func TestDtmBranchRunsOnceOverHTTP(t *testing.T) {
	srv := redistest.Start(t)
	c := readmeDtmConf(t)
	m := mustMiddleware(t, c, newStore(srv))
	var runs atomic.Int32
	inside, release := make(chan struct{}, 10), make(chan struct{})
	path := c.Rules[0].Path
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{{
		Method: c.Rules[0].Method, Path: path,
		Handler: func(w http.ResponseWriter, r *http.Request) {
			n := runs.Add(1)
			inside <- struct{}{}
			<-release
			httpx.OkJsonCtx(r.Context(), w, map[string]string{"op": r.URL.Query().Get("op"), "run": strconv.Itoa(int(n))})
		},
	}})
	const payload = `{"amount":30}`

	first := make(chan resttest.Result, 1)
	go func() { first <- dtmCall(t, base, path, "gid-dtm-1", "01", "action", payload) }()
	<-inside
	r := dtmCall(t, base, path, "gid-dtm-1", "01", "action", payload)
	wantRefusal(t, r, http.StatusTooEarly, "duplicate_request")
	if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || secs < 1 || secs > 5 {
		t.Fatalf("the 425's Retry-After = %q, want 1..5 seconds", r.Header.Get("Retry-After"))
	}
	close(release)
	a := <-first
	if a.Status != http.StatusOK {
		t.Fatalf("the first attempt: %d %s", a.Status, a.Body)
	}
	r = dtmCall(t, base, path, "gid-dtm-1", "01", "action", payload)
	if r.Status != a.Status || r.Body != a.Body || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("dtm's call after the first attempt: %d %s (replayed %q), want %d %s replayed",
			r.Status, r.Body, r.Header.Get("Idempotent-Replayed"), a.Status, a.Body)
	}
	if got := runs.Load(); got != 1 {
		t.Fatalf("the branch ran %d times, want once", got)
	}
	r = dtmCall(t, base, path, "gid-dtm-1", "01", "compensate", payload)
	if r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "" || r.Body == a.Body {
		t.Fatalf("the branch's compensation: %d %s (replayed %q), want a run of its own", r.Status, r.Body, r.Header.Get("Idempotent-Replayed"))
	}
	if got := runs.Load(); got != 2 {
		t.Fatalf("the action and its compensation ran %d times, want 2", got)
	}
}

// TestDtmOngoingIsNotKept: a branch that itself answers 425, dtm's "still
// running, call me later", is not kept: dtm's next call runs the branch
// again, instead of getting the 425 replayed for Retain (24 h) and the
// global transaction never finishing.
func TestDtmOngoingIsNotKept(t *testing.T) {
	srv := redistest.Start(t)
	c := readmeDtmConf(t)
	m := mustMiddleware(t, c, newStore(srv))
	var runs atomic.Int32
	path := c.Rules[0].Path
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{{
		Method: c.Rules[0].Method, Path: path,
		Handler: func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 1 {
				w.WriteHeader(http.StatusTooEarly) // a payment still pending at the bank
				return
			}
			httpx.OkJsonCtx(r.Context(), w, map[string]string{"status": "paid"})
		},
	}})
	if r := dtmCall(t, base, path, "gid-dtm-425", "01", "action", `{"amount":30}`); r.Status != http.StatusTooEarly {
		t.Fatalf("the first call: %d %s, want the branch's 425", r.Status, r.Body)
	}
	r := dtmCall(t, base, path, "gid-dtm-425", "01", "action", `{"amount":30}`)
	if r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "" || runs.Load() != 2 {
		t.Fatalf("dtm's next call: %d %s (replayed %q, %d runs), want the branch run again",
			r.Status, r.Body, r.Header.Get("Idempotent-Replayed"), runs.Load())
	}
}
