package resttest

import (
	"net/http"
	"sync/atomic"

	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock"
)

// A Gate is an order handler that holds each request inside until the
// test releases it, so that a test can send duplicates while a request
// holds its lock. Create it with NewGate.
type Gate struct {
	// Entered counts the requests that reached the handler.
	Entered atomic.Int32
	// Inside receives, as each request enters, the fencing token the
	// middleware gave it (0 without Fence). It holds 100 entries unread.
	Inside chan int64
	// Release lets one request out per send; closing it lets every
	// request, present and future, through at once.
	Release chan struct{}
}

// orderReq is what the Gate parses: the handler must see the body the
// middleware read, unchanged.
type orderReq struct {
	OrderID string `json:"orderId"`
	Note    string `json:"note,optional"`
}

// NewGate returns a Gate with nothing inside.
func NewGate() *Gate {
	return &Gate{Inside: make(chan int64, 100), Release: make(chan struct{})}
}

// Handle parses the request's JSON body {"orderId": ...} (a body without
// it gets go-zero's 400), tells Inside, waits for Release and answers 200
// with {"orderId": ...}.
func (g *Gate) Handle(w http.ResponseWriter, r *http.Request) {
	var req orderReq
	if err := httpx.Parse(r, &req); err != nil {
		httpx.ErrorCtx(r.Context(), w, err)
		return
	}
	g.Entered.Add(1)
	fence, _ := zerolock.FenceFromContext(r.Context())
	g.Inside <- fence
	<-g.Release
	httpx.OkJsonCtx(r.Context(), w, map[string]string{"orderId": req.OrderID})
}
