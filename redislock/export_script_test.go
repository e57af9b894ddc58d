package redislock

// LuaCode is the code of a script's source that go-zero's store sends with
// EVAL, for tests that tell scripts apart by what is sent.
var LuaCode = luaCode
