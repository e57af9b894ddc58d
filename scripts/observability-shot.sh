#!/usr/bin/env bash
# Takes docs/observability.png (make observability): example/api under a
# minute of load on a redis-server, scraped every second by Debian's
# prometheus, the panels of docs/grafana/zerolock.json drawn from it and
# screenshotted by Debian's headless chromium. Everything listens on
# loopback ports and is stopped when the script ends or is interrupted
# (bench/observeshot does the work and kills what it started). LOAD sets
# the load's length (default 60s).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v go >/dev/null || { echo "make observability needs the go command on PATH" >&2; exit 1; }

ZEROLOCK_NEEDED_BY='make observability' ./scripts/ensure-packages.sh prometheus:prometheus chromium:chromium redis-server:redis-server

tmp=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(cd bench && go build -o "$tmp/observeshot" ./observeshot)
"$tmp/observeshot" -repo . -out docs/observability.png -load "${LOAD:-60s}" &
pid=$!
wait "$pid"
pid=
