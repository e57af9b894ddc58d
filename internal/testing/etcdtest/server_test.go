package etcdtest

import (
	"context"
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
