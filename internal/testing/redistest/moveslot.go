package redistest

import (
	"context"
	"strconv"
	"testing"
)

// Masters returns the running nodes that are masters now.
func (c *Cluster) Masters(tb testing.TB) []*Server {
	tb.Helper()
	var masters []*Server
	for _, n := range c.Nodes {
		if !n.running() {
			continue
		}
		role, err := n.Client(tb).Do(context.Background(), "role").Slice()
		if err != nil {
			tb.Fatalf("redistest: ROLE of %s: %v", n.Addr(), err)
		}
		if len(role) > 0 && role[0] == "master" {
			masters = append(masters, n)
		}
	}
	return masters
}

// MoveSlot moves slot, with its keys, from the master serving it to the
// master to, as a resharding does (IMPORTING, MIGRATING, MIGRATE, then
// SETSLOT NODE on every master), and returns the master it came from.
func (c *Cluster) MoveSlot(tb testing.TB, slot int, to *Server) (from *Server) {
	tb.Helper()
	ctx := context.Background()
	for _, m := range c.Masters(tb) {
		owner, err := m.Client(tb).Do(ctx, "cluster", "myid").Text()
		if err != nil {
			tb.Fatalf("redistest: CLUSTER MYID on %s: %v", m.Addr(), err)
		}
		if servesSlot(tb, m, owner, slot) {
			from = m
			break
		}
	}
	if from == nil {
		tb.Fatalf("redistest: no master serves slot %d", slot)
	}
	if from == to {
		return from
	}
	src, dst := from.Client(tb), to.Client(tb)
	srcID, err := src.Do(ctx, "cluster", "myid").Text()
	if err != nil {
		tb.Fatalf("redistest: CLUSTER MYID: %v", err)
	}
	dstID, err := dst.Do(ctx, "cluster", "myid").Text()
	if err != nil {
		tb.Fatalf("redistest: CLUSTER MYID: %v", err)
	}
	must := func(err error, what string) {
		if err != nil {
			tb.Fatalf("redistest: move slot %d: %s: %v", slot, what, err)
		}
	}
	must(dst.Do(ctx, "cluster", "setslot", slot, "importing", srcID).Err(), "IMPORTING")
	must(src.Do(ctx, "cluster", "setslot", slot, "migrating", dstID).Err(), "MIGRATING")
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		must(err, "GETKEYSINSLOT")
		if len(keys) == 0 {
			break
		}
		args := []any{"migrate", "127.0.0.1", strconv.Itoa(to.Port()), "", 0, 5000, "keys"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(src.Do(ctx, args...).Err(), "MIGRATE")
	}
	// The new owner first, then the old one (which then drops the slot's
	// shard channels), then the others.
	must(dst.Do(ctx, "cluster", "setslot", slot, "node", dstID).Err(), "SETSLOT NODE on the new owner")
	must(src.Do(ctx, "cluster", "setslot", slot, "node", dstID).Err(), "SETSLOT NODE on the old owner")
	for _, m := range c.Masters(tb) {
		if m != from && m != to {
			must(m.Client(tb).Do(ctx, "cluster", "setslot", slot, "node", dstID).Err(), "SETSLOT NODE")
		}
	}
	return from
}

// RestoreSlot gives slot back to owner after a MoveSlot, even one that
// failed half-way: every master forgets the slot's migration state
// (SETSLOT STABLE), then the slot and its keys move to owner if another
// master serves it.
func (c *Cluster) RestoreSlot(tb testing.TB, slot int, owner *Server) {
	tb.Helper()
	for _, m := range c.Masters(tb) {
		_ = m.Client(tb).Do(context.Background(), "cluster", "setslot", slot, "stable").Err()
	}
	c.MoveSlot(tb, slot, owner)
}

// servesSlot reports whether the node id, m, serves slot in m's view.
func servesSlot(tb testing.TB, m *Server, id string, slot int) bool {
	tb.Helper()
	slots, err := m.Client(tb).ClusterSlots(context.Background()).Result()
	if err != nil {
		tb.Fatalf("redistest: CLUSTER SLOTS on %s: %v", m.Addr(), err)
	}
	for _, s := range slots {
		if s.Start <= slot && slot <= s.End && len(s.Nodes) > 0 {
			return s.Nodes[0].ID == id
		}
	}
	return false
}
