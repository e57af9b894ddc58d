package redislock

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed acquire.lua
	acquireSource string
	acquireScript = newScript(acquireSource)

	//go:embed release.lua
	releaseSource string
	releaseScript = newScript(releaseSource)

	//go:embed fence.lua
	fenceSource string
	fenceScript = newScript(fenceSource)

	//go:embed renew.lua
	renewSource string
	renewScript = newScript(renewSource)

	// allScripts lets the go-zero adapter find a script by its digest.
	allScripts = []*script{acquireScript, releaseScript, fenceScript, renewScript}
)

// script is a Lua script with its SHA1 digest, computed once.
type script struct {
	src string
	sha string
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

// run executes the script with EVALSHA and falls back to EVAL (which also
// caches the script on the server) when the server answers NOSCRIPT.
func (s *script) run(ctx context.Context, store Store, keys []string, args ...any) *redis.Cmd {
	cmd := store.EvalSha(ctx, s.sha, keys, args...)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		return store.Eval(ctx, s.src, keys, args...)
	}
	return cmd
}
