package redislock

import (
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
)

// slotCount is the number of Redis Cluster hash slots.
const slotCount = 16384

// keySlot is the Redis Cluster hash slot of key, computed as Redis does:
// CRC16 of the hash tag (the text between the first '{' and the first '}'
// after it, when not empty), else of the whole key.
func keySlot(key string) int {
	return int(crc16(hashTag(key))) % slotCount
}

// hashTag returns the part of key that Redis hashes.
func hashTag(key string) string {
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

// companionKey names a key (or shard channel) that belongs to the same
// hash slot as key, so that one script can touch both on Redis Cluster:
// the fencing counter and the release channel of a lock.
//
// A key with a hash tag keeps it by having suffix appended. A key without
// one and without '}' becomes the tag itself. Anything else (an empty key,
// or one whose '}' would end a wrapping tag early) gets a short tag known
// to hash to the key's slot, followed by the key. Each form ends in its own
// marker, and the key can be read back from each, so two keys never share a
// companion.
func companionKey(key, suffix string) string {
	if tag := hashTag(key); tag != key {
		return key + ":" + suffix + "|1"
	}
	if key != "" && !strings.Contains(key, "}") {
		return "{" + key + "}:" + suffix + "|2"
	}
	return "{" + slotTag(keySlot(key)) + "}:" + suffix + ":" + key + "|3"
}

var (
	slotTagsOnce sync.Once
	slotTags     []string
)

// slotTag returns a short string whose CRC16 falls in slot. The table is
// built once, the first time a key needs it (a few milliseconds).
func slotTag(slot int) string {
	slotTagsOnce.Do(func() {
		slotTags = make([]string, slotCount)
		for i, found := 0, 0; found < slotCount; i++ {
			tag := strconv.Itoa(i)
			if s := int(crc16(tag)) % slotCount; slotTags[s] == "" {
				slotTags[s] = tag
				found++
			}
		}
	})
	return slotTags[slot]
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

// clustered reports whether store spreads keys over the slots of a Redis
// Cluster, so that one script may touch only keys of one slot.
func clustered(store Store) bool {
	switch s := store.(type) {
	case *redis.ClusterClient:
		return true
	case goZeroStore:
		return s.r.Type == zredis.ClusterType
	case *redis.Ring:
		return true // a Ring shards keys over servers: one script, one shard
	}
	return false
}

// sameSlot reports whether all keys hash to one Cluster slot.
func sameSlot(keys []string) bool {
	for _, k := range keys[1:] {
		if keySlot(k) != keySlot(keys[0]) {
			return false
		}
	}
	return true
}
