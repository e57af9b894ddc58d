package zklock

import "strings"

// escapeKey turns a lock key into one ZooKeeper node name, reversibly: every
// byte outside [A-Za-z0-9_:-] becomes %XX, so the name never holds '/', is
// never "." or "..", and is plain ASCII, which ZooKeeper accepts whatever
// the key's bytes. The empty key becomes "%", which no other key makes.
func escapeKey(key string) string {
	if key == "" {
		return "%"
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == ':', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
