package middleware_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/internal/replay"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
)

// typicalPayment is a payment API's answer of about 1 KiB: field names
// repeat, values do not.
func typicalPayment() map[string]any {
	items := make([]map[string]any, 4)
	for i := range items {
		items[i] = map[string]any{
			"id": fmt.Sprintf("li_1NXWPnLkdIwHu7ixR%05d", 31337*(i+1)), "sku": fmt.Sprintf("SKU-%04d-%c", 7919*(i+1)%10000, 'A'+i),
			"quantity": i + 1, "unitAmount": 1299 + 350*i, "description": []string{"Espresso beans 1kg", "Ceramic pour-over dripper", "Paper filters x100", "Gooseneck kettle"}[i],
		}
	}
	return map[string]any{
		"id": "pay_3MtwBwLkdIwHu7ix28a3tqPa", "object": "payment", "status": "succeeded",
		"amount": 9142, "amountReceived": 9142, "currency": "eur", "created": 1718035200,
		"customer":      map[string]any{"id": "cus_NffrFeUfNV2Hib", "email": "jenny.rosen@example.com", "name": "Jenny Rosen"},
		"paymentMethod": map[string]any{"type": "card", "brand": "visa", "last4": "4242", "expMonth": 8, "expYear": 2027},
		"items":         items,
		"shipping":      map[string]any{"line1": "Kurfürstendamm 21", "city": "Berlin", "postalCode": "10719", "country": "DE"},
		"metadata":      map[string]any{"orderId": "ord_8472910", "channel": "mobile-ios", "appVersion": "5.12.0"},
	}
}

// TestReplayStoredSize measures what a kept response costs in Redis, for
// a typical 1 KiB JSON answer and a 100-byte one: the value's length and
// MEMORY USAGE of the key, as stored (compressed when that pays) and as
// it would be uncompressed. Run with -v for the numbers.
func TestReplayStoredSize(t *testing.T) {
	srv := redistest.Start(t)
	small := map[string]any{"paymentId": "pay_3MtwBwLkdIwHu7ix28a3tqPa", "status": "succeeded", "amount": 500, "currency": "eur"}
	m := mustMiddleware(t, replayConf("/pay", payKeys...), newStore(srv))
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{{
		Method: http.MethodPost, Path: "/pay", Handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Size") == "small" {
				httpx.OkJsonCtx(r.Context(), w, small)
				return
			}
			httpx.OkJsonCtx(r.Context(), w, typicalPayment())
		},
	}}, rest.WithJwt(jwtSecret))
	admin := srv.Client(t)
	ctx := context.Background()
	for _, size := range []string{"typical", "small"} {
		t.Run(size, func(t *testing.T) {
			existing := map[string]bool{}
			for _, k := range admin.Keys(ctx, "*").Val() {
				existing[k] = true
			}
			r := resttest.Do(t, http.MethodPost, base+"/pay", `{"amount":500}`, append(payHeaders(t, payer, "k-size-"+size), "X-Size", size)...)
			if r.Status != http.StatusOK {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			var stored string
			for _, k := range admin.Keys(ctx, "*").Val() {
				if !existing[k] {
					stored = k
				}
			}
			value := admin.Get(ctx, stored).Val()
			const prefix = "\x00zerolock-record:"
			rec, err := replay.Decode([]byte(value[len(prefix):]), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			// The same record uncompressed: the envelope's header (version 1,
			// no flags, the kind, the fingerprint) and the payload as it is.
			plain := append([]byte{1, 0, rec.Kind}, rec.Fingerprint[:]...)
			plain = append(plain, rec.Payload...)
			twin := stored[:len(stored)-1] + "x" // a key of the same length
			if err := admin.Set(ctx, twin, prefix+string(plain), 0).Err(); err != nil {
				t.Fatal(err)
			}
			defer admin.Del(ctx, twin)
			usage := func(k string) int64 {
				n, err := admin.MemoryUsage(ctx, k).Result()
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			t.Logf("%s answer: body %d bytes, payload %d; key %d bytes; stored value %d bytes, MEMORY USAGE %d; uncompressed value %d bytes, MEMORY USAGE %d",
				size, len(r.Body), len(rec.Payload), len(stored), len(value), usage(stored), len(prefix)+len(plain), usage(twin))
			compressed := len(value) < len(prefix)+len(plain)
			if want := size == "typical"; compressed != want {
				t.Fatalf("%s answer compressed = %v, want %v", size, compressed, want)
			}
		})
	}
}
