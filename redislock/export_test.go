package redislock

// ReleaseChannel exposes releaseChannel to the external tests.
var ReleaseChannel = releaseChannel
