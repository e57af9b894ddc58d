package etcdtest

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	Main(m)
}

// TestSharedServerStartsOnce: every test of a binary gets the same server,
// which answers as the member this package started.
func TestSharedServerStartsOnce(t *testing.T) {
	srv := Shared(t)
	if again := Shared(t); again != srv {
		t.Fatal("a second Shared started another server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := srv.Client(t)
	if _, err := c.Put(ctx, "etcdtest/k", "v"); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(ctx, "etcdtest/k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("read back: %v, %v", resp, err)
	}
	members, err := c.MemberList(ctx)
	if err != nil || len(members.Members) != 1 || members.Members[0].Name != srv.name {
		t.Fatalf("members: %v, %v; want only %s", members, err, srv.name)
	}
}

// TestPauseAndResume: a paused server does not answer; resumed, it does.
func TestPauseAndResume(t *testing.T) {
	srv := Shared(t)
	c := srv.Client(t)
	srv.Pause()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := c.Get(ctx, "etcdtest/k")
	cancel()
	srv.Resume()
	if err == nil {
		t.Fatal("a paused etcd answered")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Get(ctx, "etcdtest/k"); err != nil {
		t.Fatalf("resumed etcd: %v", err)
	}
}

// TestStartEndsWithTest: a server from Start serves its test, and is
// killed, its data removed, when that test ends.
func TestStartEndsWithTest(t *testing.T) {
	var srv *Server
	t.Run("user", func(t *testing.T) {
		srv = Start(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := srv.Client(t).Put(ctx, "etcdtest/start", "v"); err != nil {
			t.Fatal(err)
		}
	})
	if conn, err := net.DialTimeout("tcp", strings.TrimPrefix(srv.Endpoint(), "http://"), time.Second); err == nil {
		_ = conn.Close()
		t.Error("the server of a test that ended still accepts connections")
	}
	if _, err := os.Stat(srv.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("its data dir %s after the test: %v; want it removed", srv.dir, err)
	}
}
