// Package http stands for github.com/zeromicro/x/http in tests: its
// BaseResponse, the body of go-zero's {code, msg} convention.
package http

// BaseResponse is the body of every answer: a business code (not the HTTP
// status), its message, and the data.
type BaseResponse[T any] struct {
	// Code is the business code.
	Code int `json:"code" xml:"code"`
	// Msg is the business message.
	Msg string `json:"msg" xml:"msg"`
	// Data is the business data.
	Data T `json:"data,omitempty" xml:"data,omitempty"`
}
