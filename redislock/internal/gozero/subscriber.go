package gozero

import (
	"crypto/tls"
	"reflect"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
)

// subscribers are go-redis clients made for go-zero stores, whose own
// client is not reachable: one per address, for the life of the process,
// as go-zero keeps its own.
var subscribers sync.Map // map[string]redis.UniversalClient

// Subscriber returns a client for subscriptions on s's server, set
// up as go-zero sets up its own client for the store: over TLS when the
// store is (RedisConf.Tls, redis.WithTLS), with go-zero's own TLS settings,
// so that a password never crosses the network in the clear where the
// store's own connections are encrypted. It returns nil, and the store's
// waiters rely on back-off, when this go-zero version no longer has the
// unexported flag that tells (TestGoZeroTLSFieldKnown pins it).
func Subscriber(s *Store) redis.UniversalClient {
	if c, ok := subscribers.Load(s.R.Addr); ok {
		return c.(redis.UniversalClient)
	}
	useTLS, known := goZeroTLS(s.R)
	if !known {
		return nil
	}
	var tlsConfig *tls.Config
	if useTLS {
		// go-zero's own client for this store does not verify the
		// server's certificate either (redisclientmanager.go): stricter
		// here, and a store go-zero talks to would get no wake-ups.
		tlsConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // as go-zero's own client
	}
	// As go-zero configures its own clients: no CLIENT SETINFO (older
	// servers reject it) and no maintenance notifications (their cleanup
	// goroutines would outlive every waiter).
	maint := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	var c redis.UniversalClient
	if s.R.Type == "cluster" {
		c = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: strings.Split(s.R.Addr, ","), Username: s.R.User, Password: s.R.Pass,
			TLSConfig: tlsConfig, DisableIdentity: true, MaintNotificationsConfig: maint,
		})
	} else {
		c = redis.NewClient(&redis.Options{
			Addr: s.R.Addr, Username: s.R.User, Password: s.R.Pass,
			TLSConfig: tlsConfig, DisableIdentity: true, MaintNotificationsConfig: maint,
		})
	}
	actual, _ := subscribers.LoadOrStore(s.R.Addr, c)
	return actual.(redis.UniversalClient)
}

// goZeroTLS reads go-zero's unexported TLS flag of a store, which holds
// RedisConf.Tls (redis.WithTLS sets it). known is false if a go-zero
// version no longer has it.
func goZeroTLS(store *zredis.Redis) (on, known bool) {
	f := reflect.ValueOf(store).Elem().FieldByName("tls")
	if !f.IsValid() || f.Kind() != reflect.Bool {
		return false, false
	}
	return f.Bool(), true
}

// CloseSubscribers closes the clients Subscriber made, for a test binary's
// end: a cluster client's reload of its slot map, which a hub asks for when
// a slot moves, runs in the background and would outlive the cluster.
func CloseSubscribers() {
	subscribers.Range(func(addr, c any) bool {
		_ = c.(redis.UniversalClient).Close()
		subscribers.Delete(addr)
		return true
	})
}
