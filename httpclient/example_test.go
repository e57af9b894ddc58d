package httpclient_test

import (
	"net/http"
	"time"

	"github.com/zeromicro/go-zero/rest/httpc"

	"github.com/zerolock/zerolock/httpclient"
)

// A go-zero service that pays through another service over HTTP gives its
// payment calls idempotency keys and safe retries with one transport, in
// go-zero's httpc as in net/http. A payment made while serving a request
// that zerolock's middleware matched gets a key derived from that request,
// so the request retried by its client pays once.
func ExampleNewTransport() {
	transport := httpclient.MustNewTransport(httpclient.Conf{
		Routes:         []httpclient.Route{{Method: http.MethodPost, Path: "/payments"}},
		AttemptTimeout: 2 * time.Second,
	}, http.DefaultTransport)
	payments := httpc.NewServiceWithClient("payments", &http.Client{Transport: transport})
	_ = payments // payments.DoRequest(r.WithContext(...)) in a handler
}
