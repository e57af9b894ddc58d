// Package slot is Redis Cluster's hash-slot arithmetic, as redislock needs
// it: the slot of a key, the part of a key Redis hashes, and companion keys
// that share a key's slot so that one script may touch both on a cluster.
package slot

import (
	"strconv"
	"strings"
	"sync"
)

// Count is the number of Redis Cluster hash slots.
const Count = 16384

// Of is the Redis Cluster hash slot of key, computed as Redis does: CRC16
// of the hash tag (the text between the first '{' and the first '}' after
// it, when not empty), else of the whole key.
func Of(key string) int {
	return int(crc16(HashTag(key))) % Count
}

// HashTag returns the part of key that Redis hashes.
func HashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	closing := strings.IndexByte(key[open+1:], '}')
	if closing <= 0 { // none, or "{}": the whole key
		return key
	}
	return key[open+1 : open+1+closing]
}

// Companion names a key (or shard channel) that belongs to the same hash
// slot as key, so that one script can touch both on Redis Cluster: the
// fencing counter and the release channel of a lock.
//
// A key with a hash tag keeps it by having suffix appended. A key without
// one and without '}' becomes the tag itself. Anything else (an empty key,
// or one whose '}' would end a wrapping tag early) gets a short tag known
// to hash to the key's slot, followed by the key. Each form ends in its own
// marker, and the key can be read back from each, so two keys never share a
// companion.
func Companion(key, suffix string) string {
	if tag := HashTag(key); tag != key {
		return key + ":" + suffix + "|1"
	}
	if key != "" && !strings.Contains(key, "}") {
		return "{" + key + "}:" + suffix + "|2"
	}
	return "{" + tagOf(Of(key)) + "}:" + suffix + ":" + key + "|3"
}

// NamedByKey reports whether Companion names key's companions from key
// alone (key has a hash tag, or can be wrapped in one), so that a script
// can name them too; otherwise they need a tag computed from key's slot.
func NamedByKey(key string) bool {
	return HashTag(key) != key || key != "" && !strings.Contains(key, "}")
}

var (
	tagsOnce sync.Once
	tags     []string
)

// tagOf returns a short string whose CRC16 falls in slot. The table is
// built once, the first time a key needs it (a few milliseconds).
func tagOf(slot int) string {
	tagsOnce.Do(func() {
		tags = make([]string, Count)
		for i, found := 0, 0; found < Count; i++ {
			tag := strconv.Itoa(i)
			if s := int(crc16(tag)) % Count; tags[s] == "" {
				tags[s] = tag
				found++
			}
		}
	})
	return tags[slot]
}

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster uses for key slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
