package redislock

import "crypto/rand"

// newToken returns 128 bits from crypto/rand as 26 base32 characters.
// It never fails: crypto/rand.Text panics only when the OS has no entropy
// source, in which case nothing else would be safe either.
func newToken() string {
	return rand.Text()
}
