// Package market is an online market in Redis whose two operations, listing
// an item and buying one, are implemented twice: optimistically, with
// WATCH/MULTI/EXEC transactions retried on conflict (Optimistic), and
// pessimistically, with zerolock's waiting lock on all of an operation's
// keys at once (a redislock.MultiLock) around the same MULTI (Pessimistic). Both satisfy Market, so one workload (Workload.Run) can
// drive either and one check (CheckInvariants) can judge the result.
//
// The data model is the classic one:
//
//	market:user:<id>        hash, field funds: integer cents
//	market:inventory:<id>   set of the item ids the user owns, unlisted
//	market:listings         sorted set of "<item>.<seller>", scored by price
//
// Listing moves an item from its owner's inventory to the listings;
// buying moves the price from the buyer's funds to the seller's, the item
// to the buyer's inventory, and removes the listing. Every update of an
// operation is one MULTI/EXEC, so it happens entirely or not at all; the
// two implementations differ only in how they make sure that what they
// read before the MULTI (is the item owned? listed, at what price? are the
// buyer's funds enough?) still holds when it runs.
//
// One minute of use:
//
//	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	m := market.NewOptimistic(client, market.DefaultKeys)
//	if err := m.List(ctx, "alice", "lamp", 1500); err != nil {
//		return err // market.ErrNotOwned, or a Redis error
//	}
//	price, err := m.Buy(ctx, "bob", "lamp", "alice")
//	switch {
//	case errors.Is(err, market.ErrNotListed): // somebody was faster
//	case errors.Is(err, market.ErrInsufficientFunds):
//	}
//
// The keys of one operation are not in one hash slot, so the package
// targets a single Redis server (or a primary with replicas), not Redis
// Cluster: a transaction there would need the whole market under one hash
// tag, that is on one node.
package market
