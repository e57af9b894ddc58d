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
