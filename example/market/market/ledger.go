package market

import "sync"

// A Ledger is the workload's own record of what the market reported done:
// the invariants compare it with what Redis holds.
type Ledger struct {
	mu sync.Mutex
	// Lists and Sales count successful listings and purchases per item.
	Lists, Sales map[string]int64
	// Funds is each user's change of funds by the sales it took part in.
	Funds map[string]int64
	// Unknown counts operations that failed with an error that does not
	// say whether their transaction ran (a connection lost during EXEC):
	// the ledger cannot be exact then.
	Unknown int64
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{Lists: map[string]int64{}, Sales: map[string]int64{}, Funds: map[string]int64{}}
}

func (l *Ledger) listed(item string) {
	l.mu.Lock()
	l.Lists[item]++
	l.mu.Unlock()
}

func (l *Ledger) sold(buyer, item, seller string, price int64) {
	l.mu.Lock()
	l.Sales[item]++
	l.Funds[buyer] -= price
	l.Funds[seller] += price
	l.mu.Unlock()
}

func (l *Ledger) unknown() {
	l.mu.Lock()
	l.Unknown++
	l.mu.Unlock()
}
