package redislock

import "github.com/zerolock/zerolock/redislock/internal/script"

// LuaCode is the code of a script's source that go-zero's store sends with
// EVAL, for tests that tell scripts apart by what is sent.
var LuaCode = script.LuaCode
