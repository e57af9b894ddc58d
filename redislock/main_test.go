package redislock_test

import (
	"testing"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock/internal/gozero"
)

func TestMain(m *testing.M) {
	redistest.Quiet()
	redistest.Main(m, gozero.CloseSubscribers)
}
