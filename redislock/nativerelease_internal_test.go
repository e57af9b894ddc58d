package redislock

import (
	"errors"
	"testing"
)

// TestParseCommandInfo: COMMAND INFO DELIFEQ DELEX picks Valkey's DELIFEQ
// when the server has it, Redis 8.4's DELEX otherwise, and the script when
// it has neither; any other reply is not an answer.
func TestParseCommandInfo(t *testing.T) {
	info := []any{"name", int64(3)} // any non-nil entry: the command exists
	for _, tc := range []struct {
		name  string
		reply any
		want  releaseCommand
		err   bool
	}{
		{"valkey 9", []any{info, nil}, releaseDelIfEq, false},
		{"both", []any{info, info}, releaseDelIfEq, false},
		{"redis 8.4", []any{nil, info}, releaseDelEx, false},
		{"neither", []any{nil, nil}, releaseByScript, false},
		{"short", []any{nil}, releaseUnknown, true},
		{"not an array", "OK", releaseUnknown, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCommandInfo(tc.reply)
			if got != tc.want || (err != nil) != tc.err {
				t.Fatalf("parseCommandInfo(%v) = %v, %v; want %v, error %v", tc.reply, got, err, tc.want, tc.err)
			}
			if err != nil && !errors.Is(err, ErrUnexpectedReply) {
				t.Fatalf("error %v is not ErrUnexpectedReply", err)
			}
		})
	}
}
