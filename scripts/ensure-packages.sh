#!/usr/bin/env bash
# Installs the Debian packages whose commands the tests need, when a command
# is missing. Usage: ensure-packages.sh COMMAND:PACKAGE ... (COMMAND may be
# an absolute path, for packages that install outside PATH).
# Installing needs root and apt-get (as in CI); otherwise it says what to do.
# Package scripts are kept from starting system services (a policy-rc.d that
# refuses them, removed afterwards): the tests start their own servers on
# loopback ports and nothing else should be left running.
set -euo pipefail

missing=()
for pair in "$@"; do
  cmd=${pair%%:*} pkg=${pair#*:}
  if [[ $cmd == /* ]]; then
    [ -x "$cmd" ] || missing+=("$pkg")
  else
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "${ZEROLOCK_NEEDED_BY:-make test} needs: ${missing[*]}. Install them (apt-get install ${missing[*]}) or run make test as root on Debian." >&2
  exit 1
fi

policy=/usr/sbin/policy-rc.d
created_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
fi
trap '[ -n "$created_policy" ] && rm -f "$policy"' EXIT

echo "installing ${missing[*]} with apt-get"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
