package redislock

import (
	"strings"
	"testing"
)

// TestNewLockToken: lock tokens are 26 characters of crypto/rand.Text's
// alphabet and a 27th, ".", which a waiter's mark replaces, or "_" for a
// lock that announces nothing; no two alike.
func TestNewLockToken(t *testing.T) {
	seen := map[string]bool{}
	for i := range 1000 {
		quiet, end := i%2 == 1, byte(lockTokenEnd)
		if quiet {
			end = quietTokenEnd
		}
		tok := newLockToken(quiet)
		if len(tok) != lockTokenLen || tok[26] != end || strings.Trim(tok[:26], base32) != "" {
			t.Fatalf("newLockToken(%v) = %q", quiet, tok)
		}
		if seen[tok] {
			t.Fatalf("newLockToken() repeated %q", tok)
		}
		seen[tok] = true
	}
}

// TestIsOwnHold: a hold is a token's when it is the token or the token
// marked; never a marked older token, another's, or a prefix.
func TestIsOwnHold(t *testing.T) {
	tok := newLockToken(false)
	marked := tok[:26] + "!"
	quiet := newLockToken(true)
	for _, tc := range []struct {
		held, token string
		want        bool
	}{
		{tok, tok, true},
		{marked, tok, true},
		{newLockToken(false), tok, false},
		{quiet[:26] + "!", quiet, false}, // a quiet token is never marked
		{tok[:26], tok, false},
		{tok + "!", tok, false},
		{marked, marked, true},
		{marked + "!", marked, false},
		{"ABCDEFGHIJKLMNOPQRSTUVWXY!", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", false}, // older tokens are never marked
		{"", tok, false},
	} {
		if got := isOwnHold(tc.held, tc.token); got != tc.want {
			t.Errorf("isOwnHold(%q, %q) = %v, want %v", tc.held, tc.token, got, tc.want)
		}
	}
}
