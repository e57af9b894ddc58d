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

// TestNewLockTokenBitsIndependent: no random bit feeds two characters.
// Each character carries 5 bits (its index in the alphabet); over 4000
// tokens any two of the 130 bits agree in about half of them (2000, a
// standard deviation of 32), where one bit used twice agrees in all.
func TestNewLockTokenBitsIndependent(t *testing.T) {
	const n, bits = 4000, (lockTokenLen - 1) * 5
	var set [bits][n]bool
	for k := range n {
		tok := newLockToken(false)
		for i := range lockTokenLen - 1 {
			v := strings.IndexByte(base32, tok[i])
			for b := range 5 {
				set[i*5+b][k] = v>>b&1 == 1
			}
		}
	}
	for a := range bits {
		for b := a + 1; b < bits; b++ {
			agree := 0
			for k := range n {
				if set[a][k] == set[b][k] {
					agree++
				}
			}
			if agree < n/2-400 || agree > n/2+400 {
				t.Fatalf("bits %d and %d of the token agree in %d of %d tokens", a, b, agree, n)
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
