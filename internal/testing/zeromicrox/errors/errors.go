// Package errors stands for github.com/zeromicro/x/errors in tests: its
// CodeMsg, the error of go-zero's {code, msg} convention.
package errors

import "fmt"

// CodeMsg is an error with a business code and a message.
type CodeMsg struct {
	Code int
	Msg  string
}

// Error implements error, as zeromicro/x does.
func (c *CodeMsg) Error() string {
	return fmt.Sprintf("code: %d, msg: %s", c.Code, c.Msg)
}

// New returns a *CodeMsg.
func New(code int, msg string) error {
	return &CodeMsg{Code: code, Msg: msg}
}
