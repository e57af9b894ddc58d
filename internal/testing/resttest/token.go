package resttest

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// Token signs a go-zero style JWT (HS256, valid for an hour) carrying the
// claim userId, for a route added with rest.WithJwt(secret).
func Token(tb testing.TB, secret string, userID any) string {
	tb.Helper()
	claims := jwt.MapClaims{"userId": userID, "exp": time.Now().Add(time.Hour).Unix()}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
