package market

import "strings"

// Keys is the prefix of a market's Redis keys; its methods name them.
// Markets with different prefixes share a server without meeting.
type Keys string

// DefaultKeys is the prefix of the command's market, "market", and of
// every market and workload whose Keys are empty.
const DefaultKeys Keys = "market"

func (k Keys) orDefault() Keys {
	if k == "" {
		return DefaultKeys
	}
	return k
}

// FundsField is the field of a user's hash that holds its funds, in cents.
const FundsField = "funds"

// User is the hash of user id: FundsField holds its funds.
func (k Keys) User(id string) string { return string(k) + ":user:" + id }

// Inventory is the set of the items user id owns and has not listed.
func (k Keys) Inventory(id string) string { return string(k) + ":inventory:" + id }

// Listings is the sorted set of listings ("<item>.<seller>") by price.
func (k Keys) Listings() string { return string(k) + ":listings" }

// Item is the version counter of item: every listing or sale of the item
// increments it in its transaction, so that Optimistic at PerItem watches
// this key instead of the whole listings set.
func (k Keys) Item(item string) string { return string(k) + ":item:" + item }

// Lock is the key of Pessimistic's lock on name ("item:<id>", "user:<id>"
// or "market").
func (k Keys) Lock(name string) string { return string(k) + ":lock:" + name }

// Pattern matches every key of the market, for SCAN.
func (k Keys) Pattern() string { return string(k) + ":*" }

// Listing is the member of the listings set for item sold by seller. Item
// ids must not contain a dot; seller ids may.
func Listing(item, seller string) string { return item + "." + seller }

// ParseListing splits a listing member into its item and seller; ok is
// false when member has no dot.
func ParseListing(member string) (item, seller string, ok bool) {
	return strings.Cut(member, ".")
}
