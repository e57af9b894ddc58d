package guard

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/stubbackend"
)

// A replay rule compiles only when one of its keys names the caller or its
// keys are shared on purpose (on the configuration or the rule); the other
// modes never need either, and Rule.Shared says whether they are shared.
func TestCompileReplayNamesCaller(t *testing.T) {
	g := &Guard{Backend: stubbackend.Recorders(), CallerKeys: "claim:userId"}
	for _, tc := range []struct {
		name           string
		defaults, rule Settings
		refused        bool
		shared         bool
	}{
		{name: "replay without a caller", rule: Settings{Mode: ModeReplay}, refused: true},
		{name: "replay naming its caller", rule: Settings{Mode: ModeReplay, NamesCaller: true}},
		{name: "replay shared by the rule", rule: Settings{Mode: ModeReplay, SharedKeys: true}, shared: true},
		{name: "replay shared by the conf", defaults: Settings{SharedKeys: true}, rule: Settings{Mode: ModeReplay}, shared: true},
		{name: "replay by the conf without a caller", defaults: Settings{Mode: ModeReplay}, refused: true},
		{name: "inflight without a caller", rule: Settings{Mode: ModeInflight}},
		{name: "window without a caller", rule: Settings{Mode: ModeWindow}},
		{name: "inflight shared", rule: Settings{Mode: ModeInflight, SharedKeys: true}, shared: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defaults := tc.defaults
			defaults.Expire = time.Second
			if defaults.Mode == "" {
				defaults.Mode = ModeInflight
			}
			ru, err := g.Compile("POST /pay", nil, defaults, tc.rule)
			if tc.refused {
				if !errors.Is(err, ErrBadPolicy) {
					t.Fatalf("err = %v; want ErrBadPolicy", err)
				}
				for _, fix := range []string{"claim:userId", "SharedKeys: true", "names the caller"} {
					if !strings.Contains(err.Error(), fix) {
						t.Errorf("err = %q; want it to name %q", err, fix)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ru.Shared != tc.shared {
				t.Fatalf("Shared = %v; want %v", ru.Shared, tc.shared)
			}
		})
	}
}
