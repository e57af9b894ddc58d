package redistest

import (
	"context"
	"testing"
)

func TestKillAndRestart(t *testing.T) {
	srv := Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered after Kill")
	}
	srv.Restart(t)
	if n := c.Exists(ctx, "k").Val(); n != 0 {
		t.Fatal("data survived a restart without persistence")
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
}
