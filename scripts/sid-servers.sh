#!/usr/bin/env bash
# Fetches Valkey and Redis servers from Debian sid and makes them runnable on
# an older Debian (12 here) without installing anything into /.
#
# Usage: scripts/sid-servers.sh [--refresh] [--all-libs] [CACHE_DIR]
#
#   CACHE_DIR   where everything goes (default: .cache/sid-servers in the repo
#               root). Nothing is written outside it; no root needed.
#   --refresh   fetch again even if the cached servers work.
#   --all-libs  take every shared library the binaries load from sid, none
#               from the host (the default takes from sid only what the host
#               lacks or has too old).
#
# Result: CACHE_DIR/bin/valkey-server, valkey-cli, redis8-server, redis8-cli:
# wrappers that exec sid's own dynamic loader (CACHE_DIR/root/usr/lib64/
# ld-linux-x86-64.so.2) with --library-path pointing at the unpacked sid
# libraries, on the unmodified sid binary. CACHE_DIR/manifest lists the sid
# packages unpacked and the libraries still loaded from the host.
#
# Steps: the Debian mirror is read from the machine's apt sources
# (sources.list and sources.list.d, one-line and deb822 formats; the
# SID_SERVERS_MIRROR environment variable overrides it); the sid InRelease is
# checked with gpgv against the source's Signed-By keyring and the Debian
# archive keyring; the main/binary-amd64 Packages index is checked against
# InRelease's SHA256; every .deb against the index's SHA256 and size. The
# packages valkey-server, valkey-tools, redis-server, redis-tools and libc6
# are unpacked with dpkg -x; then sid's loader lists what each binary loads
# (as ldd does), and for every library it cannot find, or finds on the host
# without a needed symbol version, the sid package that ships it is unpacked
# too (looked up by its soname, the host package owning the old file, and the
# library packages in the binaries' Depends, recursively), until nothing is
# missing. Finally each wrapper must answer --version.
#
# Idempotent: when the four wrappers exist and answer --version it does
# nothing. A lock (flock on CACHE_DIR/.lock) serializes concurrent runs.
# On any failure it names the step that failed and exits non-zero.
set -Eeuo pipefail

prog=sid-servers
say() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() { printf '%s: FAILED: %s\n' "$prog" "$*" >&2; exit 1; }

usage() { sed -n '2,/^set -Eeuo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
refresh='' all_libs='' cache=''
while [ $# -gt 0 ]; do
  case $1 in
    --refresh) refresh=1 ;;
    --all-libs) all_libs=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) usage >&2; die "unknown option $1" ;;
    *) [ -z "$cache" ] || die "more than one CACHE_DIR given"; cache=$1 ;;
  esac
  shift
done
cache=${cache:-$repo/.cache/sid-servers}
mkdir -p "$cache" || die "cannot create cache directory $cache"
cache=$(cd "$cache" && pwd)
case $cache in *:*) die "CACHE_DIR must not contain ':' (it goes into ld.so --library-path): $cache" ;; esac

wrappers=(valkey-server valkey-cli redis8-server redis8-cli)
# wrapper name -> path of the binary inside the unpacked root
declare -A wrapper_target=(
  [valkey-server]=usr/bin/valkey-server
  [valkey-cli]=usr/bin/valkey-cli
  [redis8-server]=usr/bin/redis-server
  [redis8-cli]=usr/bin/redis-cli
)
primary=(valkey-server valkey-tools redis-server redis-tools libc6)

ready() {
  local w
  for w in "${wrappers[@]}"; do
    [ -x "$cache/bin/$w" ] && "$cache/bin/$w" --version >/dev/null 2>&1 || return 1
  done
}
show_versions() {
  local w
  for w in "${wrappers[@]}"; do
    printf '  %-14s %s\n' "$w" "$("$cache/bin/$w" --version 2>&1 | head -n1)" >&2
  done
}

# One run at a time per cache directory.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache/.lock"
  if ! flock -n 9; then
    say "waiting for another run on $cache"
    flock 9
  fi
fi

if [ -z "$refresh" ] && ready; then
  say "cached in $cache/bin (--refresh to fetch again):"
  show_versions
  exit 0
fi

for cmd in curl dpkg dpkg-deb gpgv sha256sum xz gzip awk; do
  command -v "$cmd" >/dev/null 2>&1 || die "needs the command $cmd (apt-get install ${cmd/sha256sum/coreutils})"
done
arch=$(dpkg --print-architecture)
[ "$arch" = amd64 ] || die "only amd64 is supported (this machine is $arch)"
triplet=x86_64-linux-gnu

work=$cache/.work
rm -rf "$work" "$cache/root.new"
mkdir -p "$work/debs" "$work/gnupg"
chmod 700 "$work/gnupg"
stage=$cache/root.new
cleanup() { rm -rf "$work" "$stage"; }
trap cleanup EXIT
step='starting'
trap 'die "$step (command failed at line $LINENO)"' ERR

# curl with apt's proxy if apt has one and the environment does not.
if [ -z "${http_proxy:-}${https_proxy:-}" ] && command -v apt-config >/dev/null 2>&1; then
  eval "$(apt-config shell apt_http_proxy Acquire::http::Proxy apt_https_proxy Acquire::https::Proxy)"
  [ -n "${apt_http_proxy:-}" ] && [ "$apt_http_proxy" != DIRECT ] && export http_proxy=$apt_http_proxy
  [ -n "${apt_https_proxy:-}" ] && [ "$apt_https_proxy" != DIRECT ] && export https_proxy=$apt_https_proxy
fi
fetch() { # URL FILE
  curl -fsSL --retry 2 --connect-timeout 20 --max-time 600 -o "$2" "$1" </dev/null
}

# ---------------------------------------------------------------- mirror ---
# Prints "URI<TAB>COMPONENTS<TAB>SIGNED-BY" for every enabled "deb" source.
apt_sources() {
  local sl=/etc/apt/sources.list sp=/etc/apt/sources.list.d/ f
  if command -v apt-config >/dev/null 2>&1; then
    eval "$(apt-config shell sl Dir::Etc::sourcelist/f sp Dir::Etc::sourceparts/d)"
  fi
  for f in "$sl" "${sp%/}"/*; do
    [ -f "$f" ] && [ -r "$f" ] || continue
    case $f in
      *.list)
        awk '{ sub(/#.*/, "") }
          $1 != "deb" { next }
          { line = $0; sub(/^[ \t]*deb[ \t]+/, "", line); opts = ""
            if (line ~ /^\[/) { i = index(line, "]"); opts = substr(line, 2, i - 2); line = substr(line, i + 1) }
            gsub(/^[ \t]+|[ \t]+$/, "", line); n = split(line, w, /[ \t]+/)
            if (n < 2) next
            comps = ""; for (i = 3; i <= n; i++) comps = comps " " w[i]
            sb = ""; m = split(opts, o, /[ \t]+/)
            for (i = 1; i <= m; i++) if (tolower(o[i]) ~ /^signed-by=/) { sb = o[i]; sub(/^[^=]*=/, "", sb) }
            printf "%s\t%s\t%s\n", w[1], comps, sb }' "$f" ;;
      *.sources)
        awk 'BEGIN { RS = ""; FS = "\n" }
          { delete v; last = ""
            for (i = 1; i <= NF; i++) {
              l = $i
              if (l ~ /^#/) continue
              if (l ~ /^[ \t]/) { if (last != "") v[last] = v[last] "\n" l; continue }
              k = tolower(l); sub(/:.*/, "", k); val = l; sub(/^[^:]*:[ \t]*/, "", val)
              v[k] = val; last = k
            }
            if (tolower(v["enabled"]) == "no") next
            if ((" " v["types"] " ") !~ /[ \t]deb[ \t]/) next
            sb = v["signed-by"]; if (sb ~ /\n/) sb = ""
            n = split(v["uris"], u, /[ \t]+/)
            for (i = 1; i <= n; i++) if (u[i] != "") printf "%s\t%s\t%s\n", u[i], " " v["components"], sb }' "$f" ;;
    esac
  done
}

# Verifies InRelease at $1 with gpgv; writes the signed text to $2.
verify_release() { # INRELEASE OUT SIGNED-BY
  local k keyrings=() status
  for k in ${3//,/ } /usr/share/keyrings/debian-archive-keyring.gpg /etc/apt/trusted.gpg.d/*.gpg /etc/apt/trusted.gpg; do
    if [[ $k == /* && -r $k ]]; then keyrings+=(--keyring "$k"); fi
  done
  [ ${#keyrings[@]} -gt 0 ] || return 1
  status=$(GNUPGHOME=$work/gnupg gpgv --status-fd 1 "${keyrings[@]}" --output "$2" "$1" 2>/dev/null) || true
  grep -q '^\[GNUPG:\] VALIDSIG' <<<"$status" && ! grep -q '^\[GNUPG:\] BADSIG' <<<"$status"
}

step='reading the Debian mirror from the apt sources'
if [ -n "${SID_SERVERS_MIRROR:-}" ]; then
  candidates=$(printf '%s\t main\t\n' "$SID_SERVERS_MIRROR")
else
  candidates=$(apt_sources | awk -F'\t' '!seen[$1]++ { print ($2 ~ / main( |$)/ ? 0 : 1) "\t" $0 }' |
    sort -s -t"$(printf '\t')" -k1,1 | cut -f2-)
fi
[ -n "$candidates" ] || die "no 'deb' source found in the apt sources (/etc/apt/sources.list, /etc/apt/sources.list.d); set SID_SERVERS_MIRROR=http://deb.debian.org/debian"

mirror='' suite='' tried=()
while IFS=$'\t' read -r uri _ signed_by; do
  case $uri in http://* | https://* | ftp://* | file:/*) ;; *) tried+=("$uri: scheme not supported"); continue ;; esac
  uri=${uri%/}
  for s in sid unstable; do
    if ! err=$(fetch "$uri/dists/$s/InRelease" "$work/InRelease" 2>&1); then
      tried+=("$uri/dists/$s/InRelease: ${err:-not available}"); continue
    fi
    if ! verify_release "$work/InRelease" "$work/Release" "$signed_by"; then
      tried+=("$uri/dists/$s/InRelease: signature not verified by gpgv (keyrings: ${signed_by:-none} + debian-archive-keyring)"); continue
    fi
    if ! grep -Eq '^(Suite: unstable|Codename: sid)$' "$work/Release"; then
      tried+=("$uri/dists/$s: not Debian unstable"); continue
    fi
    mirror=$uri suite=$s
    break 2
  done
done <<<"$candidates"
if [ -z "$mirror" ]; then
  say "no mirror with a verified Debian sid suite; tried:"
  printf '  %s\n' "${tried[@]}" >&2
  die "no Debian sid in the apt mirrors (no network, or the mirror has no sid). SID_SERVERS_MIRROR=URL overrides the mirror"
fi
release_date=$(sed -n 's/^Date: //p' "$work/Release")
say "mirror $mirror, suite $suite (InRelease verified, dated $release_date)"

# --------------------------------------------------------- Packages index ---
step="fetching the Packages index of $mirror/dists/$suite"
by_hash=$(sed -n 's/^Acquire-By-Hash: //p' "$work/Release")
index_line=''
for ext in .xz .gz ''; do
  index_line=$(awk -v want="main/binary-$arch/Packages$ext" '
    /^[^ ]/ { sha = ($0 ~ /^SHA256:/) } sha && $3 == want { print $1, $2, $3; exit }' "$work/Release")
  [ -n "$index_line" ] && break
done
[ -n "$index_line" ] || die "the sid Release file of $mirror lists no main/binary-$arch/Packages index"
read -r index_sha index_size index_path <<<"$index_line"
index_file=$work/Packages${index_path##*Packages}
got=''
if [ "$by_hash" = yes ] && fetch "$mirror/dists/$suite/${index_path%/*}/by-hash/SHA256/$index_sha" "$index_file" 2>/dev/null; then
  got=1
fi
if [ -z "$got" ]; then
  fetch "$mirror/dists/$suite/$index_path" "$index_file" || die "cannot download $mirror/dists/$suite/$index_path"
fi
[ "$(sha256sum <"$index_file" | cut -d' ' -f1)" = "$index_sha" ] ||
  die "$index_path from $mirror does not match the SHA256 in the verified InRelease"
case $index_file in
  *.xz) decompress=(xz -dc) ;;
  *.gz) decompress=(gzip -dc) ;;
  *) decompress=(cat) ;;
esac

# One line per package that matters here: the primary packages and every
# shared-library package (Section libs/oldlibs).
# Fields, separated by US (\037, as tabs would merge empty fields in read):
# package version section depends pre-depends provides filename size sha256
"${decompress[@]}" "$index_file" | awk -v prim=" ${primary[*]} " '
  BEGIN { RS = ""; FS = "\n"; OFS = "\037" }
  { delete v
    for (i = 1; i <= NF; i++) {
      l = $i; if (l ~ /^[ \t]/) continue
      k = l; sub(/:.*/, "", k); val = l; sub(/^[^:]*:[ \t]*/, "", val); v[k] = val
    }
    sec = v["Section"]; sub(/.*\//, "", sec)
    if (sec != "libs" && sec != "oldlibs" && index(prim, " " v["Package"] " ") == 0) next
    print v["Package"], v["Version"], sec, v["Depends"], v["Pre-Depends"], v["Provides"], v["Filename"], v["Size"], v["SHA256"] }' \
  >"$work/index.tsv"

declare -A P_VER P_DEP P_FILE P_SIZE P_SHA PROVIDER
while IFS=$'\037' read -r p ver sec dep pdep prov file size sha; do
  if [ -n "${P_VER[$p]:-}" ] && dpkg --compare-versions "${P_VER[$p]}" ge "$ver"; then continue; fi
  P_VER[$p]=$ver P_DEP[$p]="$pdep${pdep:+, }$dep" P_FILE[$p]=$file P_SIZE[$p]=$size P_SHA[$p]=$sha
  IFS=',' read -ra provs <<<"$prov"
  for pv in "${provs[@]}"; do
    pv=${pv%%(*}; pv=${pv// /}
    [ -n "$pv" ] && [ -z "${PROVIDER[$pv]:-}" ] && PROVIDER[$pv]=$p
  done
done <"$work/index.tsv"
for p in "${primary[@]}"; do
  [ -n "${P_VER[$p]:-}" ] || die "package $p is not in $mirror sid main/binary-$arch"
done

# A package name, or a virtual one provided by a library package -> real name.
real_pkg() {
  if [ -n "${P_VER[$1]:-}" ]; then echo "$1"; elif [ -n "${PROVIDER[$1]:-}" ]; then echo "${PROVIDER[$1]}"; fi
}

# Library packages reachable from the primaries through Depends, breadth first.
closure=()
declare -A seen=()
queue=("${primary[@]}")
for p in "${primary[@]}"; do seen[$p]=1; done
while [ ${#queue[@]} -gt 0 ]; do
  p=${queue[0]} queue=("${queue[@]:1}")
  IFS=',|' read -ra deps <<<"${P_DEP[$p]}"
  for d in "${deps[@]}"; do
    d=${d%%(*}; d=${d%%:*}; d=${d// /}
    [ -n "$d" ] || continue
    r=$(real_pkg "$d")
    [ -n "$r" ] && [ -z "${seen[$r]:-}" ] || continue
    seen[$r]=1 closure+=("$r") queue+=("$r")
  done
done

# --------------------------------------------------------------- unpack ---
declare -A unpacked=() reason=()
deb_of() { # PACKAGE: downloads and verifies its .deb, sets $deb to its path
  local p=$1 f
  f=$work/debs/${P_FILE[$p]##*/}
  if [ ! -f "$f" ]; then
    step="downloading $p ${P_VER[$p]} ($mirror/${P_FILE[$p]})"
    fetch "$mirror/${P_FILE[$p]}" "$f.part" || die "$step"
    [ "$(stat -c %s "$f.part")" = "${P_SIZE[$p]}" ] &&
      [ "$(sha256sum <"$f.part" | cut -d' ' -f1)" = "${P_SHA[$p]}" ] ||
      die "$p: ${P_FILE[$p]} does not match the size and SHA256 of the sid Packages index"
    mv "$f.part" "$f"
  fi
  deb=$f
}
unpack() { # PACKAGE WHY
  deb_of "$1"
  step="unpacking $1 ${P_VER[$1]}"
  dpkg -x "$deb" "$stage" || die "$step"
  unpacked[$1]=1 reason[$1]=$2
  say "unpacked $1 ${P_VER[$1]} ($2)"
}

mkdir -p "$stage"
say "fetching valkey ${P_VER[valkey-server]}, redis ${P_VER[redis-server]}, libc6 ${P_VER[libc6]} from sid"
for p in "${primary[@]}"; do unpack "$p" "wanted"; done

step='locating the unpacked dynamic loader'
ld_rel=''
for c in usr/lib64/ld-linux-x86-64.so.2 lib64/ld-linux-x86-64.so.2 usr/lib/$triplet/ld-linux-x86-64.so.2 lib/$triplet/ld-linux-x86-64.so.2; do
  if [ -e "$stage/$c" ]; then ld_rel=$c; break; fi
done
[ -n "$ld_rel" ] || die "sid's libc6 ${P_VER[libc6]} has no ld-linux-x86-64.so.2 where expected"
lib_rels() {
  local d
  for d in usr/lib/$triplet lib/$triplet; do
    if [ -d "$1/$d" ]; then printf '%s\n' "$d"; fi
  done
}
libpath() { # ROOT -> --library-path value
  local d out=''
  while read -r d; do out+=${out:+:}$1/$d; done < <(lib_rels "$1")
  echo "$out"
}

# Does the .deb of PACKAGE ship SONAME in a library directory?
ships() { # PACKAGE SONAME
  deb_of "$1"
  dpkg-deb -c "$deb" | awk -v s="$2" -v t="$triplet" '
    { n = $6; sub(/^\.\//, "", n) }
    n == "usr/lib/" t "/" s || n == "lib/" t "/" s || n == "usr/lib/" s || n == "lib/" s { found = 1 }
    END { exit !found }'
}

# Candidate package names for a soname (best guesses first).
guess_pkgs() { # SONAME [HOST-FILE]
  local so=$1 base ver n owner
  if [ "${2:--}" != - ]; then
    owner=$(dpkg -S "$2" 2>/dev/null || dpkg -S "$(readlink -f "$2")" 2>/dev/null || true)
    owner=${owner%%:*}
    if [ -n "$owner" ]; then printf '%s\n%st64\n' "$owner" "$owner"; fi
  fi
  if [[ $so =~ ^(.+)\.so\.([0-9]+) ]]; then
    base=${BASH_REMATCH[1]} ver=${BASH_REMATCH[2]}
    for n in "$base" "${base//_/-}"; do
      if [[ $n =~ [0-9]$ ]]; then n=$n-$ver; else n=$n$ver; fi
      printf '%s\n%st64\n' "$n" "$n"
    done
  fi
  printf '%s\n' "${closure[@]}"
}

# Finds and unpacks the sid package shipping SONAME.
provide() { # SONAME HOST-FILE WHY
  local c r d
  declare -A tried_pkg=()
  # Already unpacked this round, with another soname of the same package?
  while read -r d; do
    if [ -e "$stage/$d/$1" ]; then return 0; fi
  done < <(lib_rels "$stage")
  while read -r c; do
    r=$(real_pkg "$c")
    [ -n "$r" ] && [ -z "${tried_pkg[$r]:-}" ] || continue
    tried_pkg[$r]=1
    [ -z "${unpacked[$r]:-}" ] || continue
    if ships "$r" "$1"; then
      unpack "$r" "$3"
      return 0
    fi
  done < <(guess_pkgs "$1" "$2")
  return 1
}

# What BINARY loads, as ldd lists it, by sid's loader with the unpacked
# libraries first (ldd's own method: ld.so --list stops at the first library
# it cannot find, the trace variable lists every one as "not found").
trace() { # BINARY
  LD_TRACE_LOADED_OBJECTS=1 "$stage/$ld_rel" --library-path "$(libpath "$stage")" "$1"
}

# Lists, with sid's loader, what the binaries need that is missing: lines
# "SONAME<TAB>HOST-FILE (- if none)<TAB>WHY".
missing_libs() {
  local b out
  for b in "${wrappers[@]}"; do
    b=$(readlink -f "$stage/${wrapper_target[$b]}")
    out=$(trace "$b" 2>&1) || true
    awk -v stage="$stage/" -v all="$all_libs" '
      /=> not found/ { print $1 "\t-\t" "not on the host"; next }
      /error while loading shared libraries: .*: cannot open shared object file/ {
        so = $0; sub(/.*error while loading shared libraries: /, "", so); sub(/: .*/, "", so)
        print so "\t-\t" "not on the host"; next }
      /: version .* not found \(required by / {
        # BINARY: FILE: version `V'"'"' not found (required by X)
        n = split($0, f, ": "); file = f[2]; so = file; sub(/.*\//, "", so)
        v = $0; sub(/.*version ./, "", v); sub(/. not found.*/, "", v)
        if (index(file, stage) != 1) print so "\t" file "\t" "host " file " lacks " v
        next }
      all != "" && $2 == "=>" {
        path = $0; sub(/^[^>]*=> /, "", path); sub(/ \(0x[0-9a-f]*\)$/, "", path)
        if (path ~ /^\// && index(path, stage) != 1) print $1 "\t" path "\t" "--all-libs" }' <<<"$out"
  done | sort -u -t$'\t' -k1,1
}

resolve() {
  local round todo so file why
  for round in $(seq 1 20); do
    todo=$(missing_libs)
    [ -n "$todo" ] || return 0
    while IFS=$'\t' read -r so file why; do
      provide "$so" "$file" "$so: $why" ||
        die "no sid package found that ships $so ($why); looked at the Depends of ${primary[*]}"
    done <<<"$todo"
  done
  die "libraries still missing after 20 rounds: $(echo "$todo" | cut -f1 | tr '\n' ' ')"
}

# What the binaries load: "SONAME<TAB>PATH" lines, from the unpacked root
# (FROM=stage) or from the host (FROM=host).
loaded() { # FROM
  local b
  for b in "${wrappers[@]}"; do
    b=$(readlink -f "$stage/${wrapper_target[$b]}")
    trace "$b" 2>/dev/null |
      awk -v stage="$stage/" -v from="$1" '$2 == "=>" {
        path = $0; sub(/^[^>]*=> /, "", path); sub(/ \(0x[0-9a-f]*\)$/, "", path)
        if ((index(path, stage) == 1) == (from == "stage")) print $1 "\t" path }' || true
  done | sort -u
}

step='resolving the libraries the binaries need'
resolve
# A library unpacked for another host library that a later sid one replaced
# (bookworm's libsystemd0 links libgcrypt, sid's dlopens it) is not loaded
# any more: unpack again without the packages none of whose libraries load.
step='dropping library packages no binary loads'
loaded=" $(loaded stage | cut -f1 | tr '\n' ' ') "
dropped=()
for p in "${!unpacked[@]}"; do
  [ "${reason[$p]}" != wanted ] || continue
  deb_of "$p"
  keep=''
  while read -r so; do
    if [[ $loaded == *" $so "* ]]; then keep=1; break; fi
  done < <(dpkg-deb -c "$deb" | awk '{ n = $6; sub(/.*\//, "", n); if (n ~ /\.so(\.|$)/) print n }')
  [ -n "$keep" ] || dropped+=("$p")
done
if [ ${#dropped[@]} -gt 0 ]; then
  say "not loaded by any binary, dropped: ${dropped[*]}"
  for p in "${dropped[@]}"; do unset "unpacked[$p]" "reason[$p]"; done
  rm -rf "$stage"
  mkdir -p "$stage"
  for p in "${!unpacked[@]}"; do deb_of "$p"; dpkg -x "$deb" "$stage" || die "unpacking $p again"; done
  step='resolving the libraries the binaries need, after dropping'
  resolve
fi

host_libs=$(loaded host | while IFS=$'\t' read -r so path; do
  owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null || true)
  owner=${owner%%:*}
  printf 'host %s %s (%s %s)\n' "$so" "$path" "${owner:-?}" "$(dpkg-query -W -f '${Version}' "$owner" 2>/dev/null || echo '?')"
done)

# --------------------------------------------------------------- install ---
step='installing into the cache'
rm -rf "$cache/root.old"
[ -e "$cache/root" ] && mv "$cache/root" "$cache/root.old"
mv "$stage" "$cache/root"
rm -rf "$cache/root.old" "$cache/bin"
mkdir -p "$cache/bin"
root=$cache/root
shq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
for w in "${wrappers[@]}"; do
  {
    echo '#!/bin/sh'
    echo "# Written by scripts/sid-servers.sh: ${wrapper_target[$w]} from Debian sid, run by sid's own"
    echo "# dynamic loader and libraries unpacked under $(shq "$root") (nothing installed into /)."
    echo 'unset LD_PRELOAD'
    echo "exec $(shq "$root/$ld_rel") --library-path $(shq "$(libpath "$root")") $(shq "$root/${wrapper_target[$w]}") \"\$@\""
  } >"$cache/bin/$w"
  chmod +x "$cache/bin/$w"
done

{
  echo "# scripts/sid-servers.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "mirror $mirror suite $suite released $release_date"
  for p in "${!unpacked[@]}"; do echo "sid $p ${P_VER[$p]} (${reason[$p]})"; done | sort
  [ -z "$host_libs" ] || echo "$host_libs"
} >"$cache/manifest"

step='checking the wrappers'
for w in "${wrappers[@]}"; do
  "$cache/bin/$w" --version >/dev/null 2>&1 || die "$cache/bin/$w --version fails: $("$cache/bin/$w" --version 2>&1 | head -n3)"
done
trap - ERR
say "ready in $cache/bin ($(du -sh "$cache/root" | cut -f1) unpacked):"
show_versions
