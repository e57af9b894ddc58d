package torture

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/faultproxy"
)

// settlerName names the settler's own connections in CLIENT LIST.
const settlerName = "torture-settler"

// A settler ends the window in which a failed call's command may still run.
// A command whose reply was lost has either run or sits in a server-side
// connection that the proxy cut; once Redis has freed every connection that
// existed when the clients paused, no such command can run any more, so the
// outcome, though unknown, took effect (or not) before that moment.
type settler struct {
	admin *redis.Client
	proxy *faultproxy.Proxy
}

// newSettler connects to the server directly, not through the proxy.
func newSettler(t *testing.T, addr string, proxy *faultproxy.Proxy) *settler {
	admin := redis.NewClient(&redis.Options{Addr: addr, ClientName: settlerName})
	t.Cleanup(func() { _ = admin.Close() })
	return &settler{admin: admin, proxy: proxy}
}

// settle must run while no client call is in flight: it cuts every proxied
// connection and returns once Redis has freed all of those it listed
// before the cut, or an error if that takes longer than 10 s.
func (s *settler) settle() error {
	before, err := s.connections()
	if err != nil {
		return fmt.Errorf("CLIENT LIST: %w", err)
	}
	s.proxy.Reset()
	deadline := time.Now().Add(10 * time.Second)
	for {
		now, err := s.connections()
		if err != nil {
			return fmt.Errorf("CLIENT LIST: %w", err)
		}
		left := 0
		for id := range before {
			if now[id] {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Redis still has %d of the cut connections after 10 s", left)
		}
		time.Sleep(time.Millisecond)
	}
}

// connections returns the ids of the server's client connections other
// than the settler's own.
func (s *settler) connections() (map[string]bool, error) {
	list, err := s.admin.ClientList(context.Background()).Result()
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		var id string
		mine := false
		for _, field := range strings.Fields(line) {
			switch {
			case strings.HasPrefix(field, "id="):
				id = field[len("id="):]
			case field == "name="+settlerName:
				mine = true
			}
		}
		if id != "" && !mine {
			ids[id] = true
		}
	}
	return ids, nil
}
