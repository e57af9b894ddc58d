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

	//go:embed acquireread.lua
	acquireReadSource string
	acquireReadScript = newScript(acquireReadSource)

	//go:embed record.lua
	recordSource string
	recordScript = newScript(recordSource)
)

// scriptsBySHA lets the go-zero adapter find a script by its digest; every
// script made by newScript is in it.
var scriptsBySHA = map[string]*script{}

// script is a Lua script with its SHA1 digest, computed once.
type script struct {
	src string
	sha string
}

// newScript makes a script and registers it in scriptsBySHA. It is called
// only when the package's variables are initialized.
func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	s := &script{src: src, sha: hex.EncodeToString(sum[:])}
	scriptsBySHA[s.sha] = s
	return s
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

// runOnce is run, except that on a processor (a go-redis client) the
// commands are sent once: a lost reply is an error, never a resend (see
// onceCmd). Other stores resend as their client does.
func (s *script) runOnce(ctx context.Context, store Store, proc processor, keys []string, args ...any) *redis.Cmd {
	if proc == nil {
		return s.run(ctx, store, keys, args...)
	}
	cmd := evalCmd(ctx, "evalsha", s.sha, keys, args)
	_ = proc.Process(ctx, onceCmd{cmd})
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = evalCmd(ctx, "eval", s.src, keys, args)
		_ = proc.Process(ctx, onceCmd{cmd})
	}
	return cmd
}

// evalCmd builds EVAL or EVALSHA as go-redis does, with the first key's
// position set for cluster routing.
func evalCmd(ctx context.Context, name, script string, keys []string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 3, 3+len(keys)+len(args))
	cmdArgs[0], cmdArgs[1], cmdArgs[2] = name, script, len(keys)
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmdArgs = append(cmdArgs, args...)
	cmd := redis.NewCmd(ctx, cmdArgs...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	return cmd
}
