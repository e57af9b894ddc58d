package redislock

// ReleaseChannel exposes releaseChannel to the external tests.
var ReleaseChannel = releaseChannel

// HubWaiters counts this process's waiters on key's release channel.
func HubWaiters(store Store, key string) int {
	h := hubFor(store, key)
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.chans[releaseChannel(key)]; ok {
		return len(c.waiters)
	}
	return 0
}
