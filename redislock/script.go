package redislock

import (
	_ "embed"

	"github.com/zerolock/zerolock/redislock/internal/script"
)

var (
	//go:embed acquire.lua
	acquireSource string
	acquireScript = script.New(acquireSource)

	//go:embed release.lua
	releaseSource string
	releaseScript = script.New(releaseSource)

	//go:embed setnxget.lua
	setNXGetSource string
	setNXGetScript = script.New(setNXGetSource)

	//go:embed fence.lua
	fenceSource string
	fenceScript = script.New(fenceSource)

	//go:embed renew.lua
	renewSource string
	renewScript = script.New(renewSource)

	//go:embed acquireread.lua
	acquireReadSource string
	acquireReadScript = script.New(acquireReadSource)

	//go:embed record.lua
	recordSource string
	recordScript = script.New(recordSource)
)
