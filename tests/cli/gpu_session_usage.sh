#!/usr/bin/env bash
# scripts/gpu_session.sh (the next GPU session's prepared device calls) without a GPU: it parses,
# and it refuses at once, exit 2 with a message, what would waste a device call: no call named, an
# unknown one, a limit under 120 s, no $OUT folder, no bundle in .gpu, two bundles there. Its whole run is rehearsed by hand
# (GPU_CHECK_REHEARSAL=1 PY=/usr/bin/python3 OUT=<folder> bash scripts/gpu_session.sh call1; docs/gpu.md).
# With test_model: every test call 1 names exists there (gtest runs a filter that matches nothing
# as a pass of no tests, which would read as call 1's tests passing).
#   usage: gpu_session_usage.sh <source dir> [test_model]
set -uo pipefail
src=$1
s=$src/scripts/gpu_session.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
bash -n "$s" || fail "bash -n"
expect2() {  # what, then the command's env and args; exit 2 and a message naming the problem
  local what=$1 want=$2
  shift 2
  local out rc
  local args=() envs=()
  while (($#)) && [[ $1 != -- ]]; do envs+=("$1"); shift; done
  [[ ${1:-} == -- ]] && shift
  args=("$@")
  out=$(cd "$work" && env "${envs[@]}" bash "$s" "${args[@]}" 2>&1 < /dev/null)
  rc=$?
  [[ $rc == 2 ]] || fail "$what: exit $rc, expected 2 ($out)"
  [[ $out == *"$want"* ]] || fail "$what: no '$want' in: $out"
}
mkdir -p "$work/out"
expect2 "no call" "usage: scripts/gpu_session.sh call1|call2" OUT="$work/out"
expect2 "unknown call" "usage:" OUT="$work/out" -- call3
expect2 "no OUT" "\$OUT must name an existing folder" OUT= -- call1
expect2 "OUT not a folder" "\$OUT must name an existing folder" OUT="$work/missing" -- call1
expect2 "limit too short" "at least 120 (got '60')" OUT="$work/out" -- call2 60
expect2 "limit not a number" "at least 120 (got '5m')" OUT="$work/out" -- call1 5m
expect2 "limit with a leading zero" "at least 120 (got '0390')" OUT="$work/out" -- call2 0390
expect2 "no bundle" "no bundle in" OUT="$work/out" -- call2
mkdir -p "$work/.gpu" && touch "$work/.gpu/downscale-a-linux-x86_64.tar.xz" "$work/.gpu/downscale-b-linux-x86_64.tar.xz"
expect2 "two bundles" "2 bundles in" OUT="$work/out" -- call1
if [[ -n ${2:-} ]]; then
  tests=
  eval "$(grep -E '^tests\+?=' "$s")"
  [[ -n $tests ]] || fail "no tests= lines in $s"
  IFS=: read -r -a names <<< "$tests"
  listed=$("$2" --gtest_filter="$tests" --gtest_list_tests | awk '/^[^ ]/ {suite=$1} /^  / {print suite $1}')
  for name in "${names[@]}"; do
    grep -qxF "$name" <<< "$listed" || fail "call 1 names $name, which test_model does not have"
  done
  echo "gpu_session.sh: call 1's ${#names[@]} tests are all in test_model"
fi
echo "gpu_session.sh: parses; usage, limit, \$OUT and bundle errors exit 2"
