// Package types holds the request and response types of demo.api.
package types

// StockReq names an item.
type StockReq struct {
	Sku string `path:"sku"`
}

// DeductReq asks to take Count units of an item from stock.
type DeductReq struct {
	Sku   string `path:"sku"`
	Count int64  `json:"count,range=[1:1000]"`
}

// StockResp is an item's stock.
type StockResp struct {
	Sku   string `json:"sku"`
	Stock int64  `json:"stock"`
}

// LoginReq names the demo user to log in.
type LoginReq struct {
	UserId string `json:"userId"`
}

// LoginResp carries the JWT.
type LoginResp struct {
	Token string `json:"token"`
}

// CreateOrderReq is an order submission.
type CreateOrderReq struct {
	OrderId string `json:"orderId"`
	Amount  int64  `json:"amount,range=[1:1000000]"`
}

// CreateOrderResp says how many times this order was processed.
type CreateOrderResp struct {
	OrderId string `json:"orderId"`
	Times   int64  `json:"times"`
}

// RedeemReq names a coupon.
type RedeemReq struct {
	Code string `path:"code"`
}

// RedeemResp says how many times the coupon was redeemed.
type RedeemResp struct {
	Code     string `json:"code"`
	Redeemed int64  `json:"redeemed"`
}

// RebuildReq names a report.
type RebuildReq struct {
	Id string `path:"id"`
}

// RebuildResp says which fencing token wrote the report.
type RebuildResp struct {
	Id    string `json:"id"`
	Fence int64  `json:"fence"`
}

// CreatePaymentReq is a payment of Amount cents. The Idempotency-Key header
// names it: the lock middleware's replay rule keys on it.
type CreatePaymentReq struct {
	Amount int64 `json:"amount,range=[1:1000000]"`
}

// CreatePaymentResp is the payment made.
type CreatePaymentResp struct {
	PaymentId string `json:"paymentId"`
	Amount    int64  `json:"amount"`
}

// ExportResp is the result of an export of the caller's orders.
type ExportResp struct {
	UserId string `json:"userId"`
	Status string `json:"status"`
}

// CheckoutReq checks an order out: pays Amount cents for it. The
// Idempotency-Key header names the checkout: the lock middleware's replay
// rule keys on it. X-Demo-Lose-Answer, when set, asks the payments service
// to lose its first answer (a demo switch).
type CheckoutReq struct {
	OrderId    string `json:"orderId"`
	Amount     int64  `json:"amount,range=[1:1000000]"`
	LoseAnswer string `header:"X-Demo-Lose-Answer,optional"`
}

// CheckoutResp is the order paid: Times is how many times the payments
// service ran the payment, PayReplayed whether the answer that reached the
// checkout was the stored one, replayed to a retry.
type CheckoutResp struct {
	OrderId     string `json:"orderId"`
	Amount      int64  `json:"amount"`
	Times       int64  `json:"times"`
	PayReplayed bool   `json:"payReplayed"`
}
