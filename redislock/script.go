package redislock

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"strings"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed acquire.lua
	acquireSource string
	acquireScript = newScript(acquireSource)

	//go:embed release.lua
	releaseSource string
	releaseScript = newScript(releaseSource)

	//go:embed setnxget.lua
	setNXGetSource string
	setNXGetScript = newScript(setNXGetSource)

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
	// code is src without its comments, which go-zero's store sends with
	// every EVAL (see GoZeroStore): the server reads and hashes each byte,
	// 2.7 µs of its CPU for a 1.3 KB source, 0.6 µs for its code.
	code    string
	codeArg any // code, boxed once
}

// newScript makes a script and registers it in scriptsBySHA. It is called
// only when the package's variables are initialized.
func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	s := &script{src: src, sha: hex.EncodeToString(sum[:]), code: luaCode(src)}
	s.codeArg = s.code
	scriptsBySHA[s.sha] = s
	return s
}

// luaCode is a script's source with its comment lines blanked and its
// indentation dropped, so that the line numbers in a script error still
// match the file. Only whole-line comments are removed: the scripts have
// no block comments and no comment after code (TestLuaCode checks).
func luaCode(src string) string {
	var b strings.Builder
	b.Grow(len(src) / 2)
	for line := range strings.Lines(src) {
		code := strings.TrimLeft(line, " \t")
		if strings.HasPrefix(code, "--") {
			code = "\n"
		}
		b.WriteString(code)
	}
	return b.String()
}

// run executes the script with EVALSHA and falls back to EVAL (which also
// caches the script on the server) when the server answers NOSCRIPT. On
// go-zero's store it runs EVAL of its code, which cannot answer NOSCRIPT.
func (s *script) run(ctx context.Context, store Store, keys []string, args ...any) *redis.Cmd {
	if gz, ok := store.(goZeroStore); ok {
		cmd := redis.NewCmd(ctx)
		val, err := gz.eval(ctx, s, keys, args)
		setCmd(cmd, val, err)
		return cmd
	}
	cmd := store.EvalSha(ctx, s.sha, keys, args...)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		return store.Eval(ctx, s.src, keys, args...)
	}
	return cmd
}

// eval is run's reply, without run's command on go-zero's store, whose
// client answers with the reply.
func (s *script) eval(ctx context.Context, store Store, keys []string, args ...any) (any, error) {
	if gz, ok := store.(goZeroStore); ok {
		return gz.eval(ctx, s, keys, args)
	}
	return s.run(ctx, store, keys, args...).Result()
}

// evalArgs is EVAL of the script's code with keys and args, as the
// arguments of one command: one allocation beyond boxing the keys (numkeys
// is a small int, which boxes without one).
func (s *script) evalArgs(keys []string, args ...any) []any {
	cmd := make([]any, 0, 3+len(keys)+len(args))
	cmd = append(cmd, "eval", s.codeArg, len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	return append(cmd, args...)
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
