// Package script is redislock's Lua script value: its source, its SHA1
// digest and the code go-zero's store sends, each computed once, and the
// commands that run it. The scripts themselves live in redislock, as .lua
// files it embeds; internal/conn runs them (EVALSHA falling back to EVAL;
// on go-zero's store the same by the code's digest, see internal/gozero).
package script

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strings"

	"github.com/redis/go-redis/v9"
)

// bySHA lets the go-zero adapter find a script by its digest; every script
// made by New is in it.
var bySHA = map[string]*Script{}

// made counts the scripts New made: the next one's Index.
var made int

// Max bounds how many scripts New makes, so that a store can keep one
// flag per script in an array (internal/gozero).
const Max = 64

// Script is a Lua script with its SHA1 digest, computed once.
type Script struct {
	Src string
	SHA string
	// Code is Src without its comments, which go-zero's store sends when
	// its server may not hold the script (see internal/gozero): the server
	// reads and hashes each byte of an EVAL, 2.7 µs of its CPU for a 1.3 KB
	// source, 0.6 µs for its code.
	Code string
	// CodeSHA is Code's digest, which go-zero's store sends by EVALSHA.
	CodeSHA string
	// Index numbers the scripts New made, from 0, below Max.
	Index      int
	codeArg    any // Code, boxed once
	codeSHAArg any // CodeSHA, boxed once
	// SHAArg is SHA boxed once: EVALSHA's argument, which boxing on each
	// call would allocate.
	SHAArg any
}

// New makes a script and registers it for Lookup. It is called only when
// redislock's variables are initialized.
func New(src string) *Script {
	if made >= Max {
		panic("script: more than script.Max scripts")
	}
	sum := sha1.Sum([]byte(src))
	s := &Script{Src: src, SHA: hex.EncodeToString(sum[:]), Code: LuaCode(src), Index: made}
	made++
	codeSum := sha1.Sum([]byte(s.Code))
	s.CodeSHA = hex.EncodeToString(codeSum[:])
	s.codeArg, s.codeSHAArg, s.SHAArg = s.Code, s.CodeSHA, s.SHA
	bySHA[s.SHA] = s
	return s
}

// Lookup returns the script made by New whose digest is sha.
func Lookup(sha string) (*Script, bool) {
	s, ok := bySHA[sha]
	return s, ok
}

// All returns every script made by New, for the tests.
func All() []*Script {
	all := make([]*Script, 0, len(bySHA))
	for _, s := range bySHA {
		all = append(all, s)
	}
	return all
}

// LuaCode is a script's source with its comment lines blanked and its
// indentation dropped, so that the line numbers in a script error still
// match the file. Only whole-line comments are removed: the scripts have
// no block comments and no comment after code (TestLuaCode checks).
func LuaCode(src string) string {
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

// EvalArgs is EVAL of the script's code with keys and args, as the
// arguments of one command: one allocation beyond boxing the keys (numkeys
// is a small int, which boxes without one).
func (s *Script) EvalArgs(keys []string, args ...any) []any {
	return command("eval", s.codeArg, keys, args)
}

// EvalShaArgs is EvalArgs by Code's digest: EVALSHA, which the server
// answers NOSCRIPT when it does not hold the code.
func (s *Script) EvalShaArgs(keys []string, args ...any) []any {
	return command("evalsha", s.codeSHAArg, keys, args)
}

// command is name script numkeys keys... args..., in one allocation.
func command(name string, script any, keys []string, args []any) []any {
	cmd := make([]any, 0, 3+len(keys)+len(args))
	cmd = append(cmd, name, script, len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	return append(cmd, args...)
}

// EvalCmd builds EVAL or EVALSHA as go-redis does, with the first key's
// position set for cluster routing.
func EvalCmd(ctx context.Context, name string, script any, keys []string, args []any) *redis.Cmd {
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

// EvalCmdBoxed is EvalCmd for a caller that keeps its keys boxed: keysArgs
// holds numKeys keys, then the arguments, and nothing is boxed again.
func EvalCmdBoxed(ctx context.Context, name string, script any, numKeys int, keysArgs []any) *redis.Cmd {
	cmdArgs := make([]any, 3, 3+len(keysArgs))
	cmdArgs[0], cmdArgs[1], cmdArgs[2] = name, script, numKeys
	cmd := redis.NewCmd(ctx, append(cmdArgs, keysArgs...)...)
	if numKeys > 0 {
		cmd.SetFirstKeyPos(3)
	}
	return cmd
}
