package httpclient_test

import (
	"testing"

	"github.com/zerolock/zerolock/internal/testing/redistest"
)

func TestMain(m *testing.M) {
	redistest.Quiet()
	redistest.Main(m)
}
