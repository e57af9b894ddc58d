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

// TestNewLockTokenUniform: every position of the token takes every
// character of the alphabet (a stuck bit would halve them): in 4000
// tokens a given character is missing from a given position with odds of
// about e^-125.
func TestNewLockTokenUniform(t *testing.T) {
	var seen [lockTokenLen - 1][256]bool
	for range 4000 {
		tok := newLockToken(false)
		for i := range lockTokenLen - 1 {
			seen[i][tok[i]] = true
		}
	}
	for i := range lockTokenLen - 1 {
		for _, c := range []byte(base32) {
			if !seen[i][c] {
				t.Fatalf("position %d never held %q in 4000 tokens", i, c)
			}
		}
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
