package native

import (
	"errors"
	"testing"

	"github.com/zerolock/zerolock/redislock/internal/errs"
)

// TestParseCommandInfo: COMMAND INFO DELIFEQ DELEX picks Valkey's DELIFEQ
// when the server has it, Redis 8.4's DELEX otherwise, and the script when
// it has neither; any other reply is not an answer.
func TestParseCommandInfo(t *testing.T) {
	info := []any{"name", int64(3)} // any non-nil entry: the command exists
	for _, tc := range []struct {
		name  string
		reply any
		want  Command
		err   bool
	}{
		{"valkey 9", []any{info, nil}, DelIfEq, false},
		{"both", []any{info, info}, DelIfEq, false},
		{"redis 8.4", []any{nil, info}, DelEx, false},
		{"neither", []any{nil, nil}, ByScript, false},
		{"short", []any{nil}, Unknown, true},
		{"not an array", "OK", Unknown, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCommandInfo(tc.reply)
			if got != tc.want || (err != nil) != tc.err {
				t.Fatalf("parseCommandInfo(%v) = %v, %v; want %v, error %v", tc.reply, got, err, tc.want, tc.err)
			}
			if err != nil && !errors.Is(err, errs.UnexpectedReply) {
				t.Fatalf("error %v is not ErrUnexpectedReply", err)
			}
		})
	}
}
