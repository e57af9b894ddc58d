package redistest

import (
	"context"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	CloseSharedCluster()
	os.Exit(code)
}

func TestSharedCluster(t *testing.T) {
	c := SharedCluster(t)
	cc := c.Client(t)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "{x}1", "{x}2"} {
		if err := cc.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatalf("SET %s on the cluster: %v", k, err)
		}
	}
	if master := c.MasterOf(t, "a"); master == nil {
		t.Fatal("no master for a")
	}
}
