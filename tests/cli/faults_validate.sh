#!/usr/bin/env bash
# Faults that must end with a one-line error and a non-zero exit, never a hang, a crash or a
# claim of work not done (issue 12, helper "validate"). Each row failed on main before:
#  1. a server that stops answering data requests: fetch says "timed out after N s waiting for
#     <url>" (after "waiting for <url> (5 s)") and exits 1 within the time-out, no temp files;
#  2. the same while opening the source (planning, in the parent): exit 1, "timed out";
#  3. a request that hangs once: retried after the time-out, the fetch completes;
#  4. `downscale train --check`: exit 0 on a good config and store, 2 on a bad config (epochs 0,
#     overlapping years, a duplicate key), 3 without a store; nothing written in every case;
#  5. run.threads=100000 and epochs 0 in `train`: exit 2 naming the key (was a segfault, and
#     "wrote checkpoints" for epochs 0);
#  6. a rank 0 stalled in backward after its first gradient bucket: rank 1 names rank 0 (the
#     list was empty).
#   usage: faults_validate.sh <downscale binary> <source dir>
set -uo pipefail
bin=$(realpath "$1")
src=$(realpath "$2")
work=$(mktemp -d)
server_pid=
trap '[[ -n $server_pid ]] && kill $server_pid 2>/dev/null; rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures+1)); }
cd "$work"

# --- the test OPeNDAP server ---
mkdir srv
/usr/bin/python3 "$src/tests/dap_server/make_sources.py" srv >/dev/null || { echo "make_sources failed"; exit 1; }
source "$src/tests/cli/dap_server.sh"
start_dap_server srv
mkdir datasets
cat > datasets/udg.yaml <<'YAML'
name: UDG-like test source
url: udg_like.nc
time_step: day
variables:
  z:  {native: "Z{level}", units: m2 s-2}
YAML
# fetch_config <name> <fault options> <timeout_s> <attempts>: predictors alone, one field, 2 years
fetch_config() {
  cat > "$1.yaml" <<YAML
run: {dir: runs/$1}
fetch:
  predictors: {dataset: udg, source: $base/faults/$2/udg_like.nc, fields: [z@500]}
  predictand: null
  lon: [-110, -90]
  lat: [30, 40]
  years: [2000, 2001]
  parallel: 1
  attempts: $4
  retry_delay: 0.05
  timeout_s: $3
YAML
}

echo "== 1. data requests hang: timed out"
fetch_config hang "hang=99+id=1" 6 1
t0=$(date +%s.%N)
out=$(timeout 60 "$bin" fetch --config hang.yaml 2>&1); rc=$?
took=$(/usr/bin/python3 -c "print(round($(date +%s.%N) - $t0, 1))")
echo "$out" | grep -E "waiting|error" | head -4
echo "exit $rc after $took s"
[[ $rc -eq 1 ]] || fail "a hung server: exit $rc, expected 1"
grep -q "error: .*timed out after 6 s waiting for $base/faults/hang=99+id=1/udg_like.nc" <<<"$out" ||
  fail "no 'timed out ... waiting for <url>' error: $out"
# The job given up says what the hang means: the server still takes connections (hung), not no network.
grep -q "error: .*timed out after 6 s .*(host ${base#http://} accepted the connection but did not answer: the server is hung" <<<"$out" ||
  fail "the last time-out gives no host hint: $out"
grep -q "waiting for $base/.*udg_like.nc.*(5 s)" <<<"$out" || fail "no 'waiting for <url> (5 s)' line"
/usr/bin/python3 -c "import sys; sys.exit(0 if $took < 20 else 1)" || fail "took $took s for a 6 s time-out"
[[ -n $(find runs/hang -name '*.tmp-*') ]] && fail "temporary files left: $(find runs/hang -name '*.tmp-*')"
[[ -e runs/hang/fetch/manifest.json ]] && fail "a manifest was written"

echo "== 2. opening the source hangs: timed out"
fetch_config hangopen "hangopen=99+id=2" 3 1
out=$(timeout 60 "$bin" fetch --config hangopen.yaml 2>&1); rc=$?
echo "$out" | grep error
[[ $rc -eq 1 ]] || fail "a server hung while opening: exit $rc, expected 1"
grep -q "timed out after 3 s waiting for $base/faults/hangopen=99+id=2/udg_like.nc" <<<"$out" ||
  fail "no 'timed out' error while opening: $out"

echo "== 3. one request hangs: retried after the time-out, the fetch completes"
fetch_config once "hang=1+id=3" 3 2
out=$(timeout 90 "$bin" fetch --config once.yaml 2>&1); rc=$?
echo "$out" | grep -E "timed out|wrote"
[[ $rc -eq 0 ]] || fail "one hung request: exit $rc, expected 0 after a retry: $out"
grep -q "timed out after 3 s.*attempt 1 of 2 failed, retrying" <<<"$out" || fail "no retry after the time-out: $out"
[[ -s runs/once/fetch/manifest.json ]] || fail "no manifest after the retry"

# --- a small store, as train_mpi.sh builds it ---
cp -r "$src/configs" .
years=(--set "synth.years=[2000,2002]" --set "fetch.years=[2000,2002]" --set "preprocess.train_years=[2000,2000]"
       --set "preprocess.validation_years=[2001,2001]" --set "preprocess.test_years=[2002,2002]")
"$bin" synth --config configs/demo.yaml "${years[@]}" 2>/dev/null &&
  "$bin" fetch --config configs/demo.yaml "${years[@]}" 2>/dev/null &&
  "$bin" preprocess --config configs/demo.yaml "${years[@]}" 2>/dev/null || { echo "could not build the store"; exit 1; }
common=("${years[@]}" --set run.threads=1 --set train.epochs=1)

# expect <code> <text> -- <downscale args...>: exit code, the text in stderr, nothing new under runs/
expect() {
  local code=$1 needle=$2
  shift 3
  local before after out rc
  before=$(find runs | sort)
  out=$("$bin" "$@" 2>&1 >/dev/null); rc=$?
  after=$(find runs | sort)
  if [[ $rc -ne $code ]]; then fail "exit $rc, expected $code: downscale $*: $out"; return; fi
  if [[ $out != *"$needle"* ]]; then fail "message lacks '$needle': downscale $*: $out"; return; fi
  [[ $before == "$after" ]] || fail "downscale $* wrote: $(diff <(echo "$before") <(echo "$after") | grep '^>')"
  echo "ok: exit $rc: ${out:-(no error)}"
}

echo "== 4. train --check"
out=$("$bin" train --check --config configs/demo.yaml "${common[@]}" 2>&1); rc=$?
echo "$out"
[[ $rc -eq 0 ]] || fail "train --check on a good config: exit $rc"
grep -q "model demo: .* parameters, output 29 x 45" <<<"$out" || fail "train --check prints no model summary"
[[ -e runs/demo/train ]] && fail "train --check created runs/demo/train"
expect 0 "" -- train --check --config configs/demo.yaml "${common[@]}"
expect 2 "--set train.epochs=0: key 'train.epochs'" -- train --check --config configs/demo.yaml "${common[@]}" \
  --set train.epochs=0
expect 2 "key 'preprocess.test_years' [2000, 2000] overlaps 'preprocess.train_years'" -- train --check \
  --config configs/demo.yaml "${common[@]}" --set "preprocess.test_years=[2000,2000]"
expect 2 "--set train.learning_rate=-0.001: key 'train.learning_rate'" -- train --check --config configs/demo.yaml \
  "${common[@]}" --set train.learning_rate=-0.001
{ cat configs/demo.yaml; printf 'train:\n  epochs: 3\n'; } > dup.yaml
expect 2 "key 'train' is given twice" -- train --check --config dup.yaml "${common[@]}"
expect 3 "nowhere/preprocess/store.h5" -- train --check --config configs/demo.yaml "${common[@]}" --set run.dir=nowhere
expect 2 "key 'train.loss' is gaussian" -- train --check --config configs/demo.yaml "${common[@]}" --set train.loss=gaussian
# train itself refuses what --check refuses: the same loss, and NCCL on a CPU run.
expect 2 "key 'train.loss' is gaussian" -- train --config configs/demo.yaml "${common[@]}" --set train.loss=gaussian
expect 2 "NCCL needs run.device cuda" -- train --check --config configs/demo.yaml "${common[@]}" \
  --set run.communicator=nccl --set run.device=cpu

echo "== 5. absurd thread counts and epochs 0 in train itself"
expect 2 "--set run.threads=100000: key 'run.threads'" -- train --config configs/demo.yaml "${common[@]}" \
  --set run.threads=100000
expect 2 "--set train.epochs=0: key 'train.epochs'" -- train --config configs/demo.yaml "${common[@]}" --set train.epochs=0
[[ -e runs/demo/train/checkpoint_last.h5 ]] && fail "a checkpoint was written"

echo "== 6. rank 0 stalls in backward: rank 1 names it"
if command -v mpirun >/dev/null; then
  mpi=(mpirun -np 2 --oversubscribe --bind-to none)
  [[ $(id -u) -eq 0 ]] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  command -v ssh >/dev/null || export OMPI_MCA_plm_rsh_agent=false
  mkdir -p runs/stall/preprocess
  ln -s "$work/runs/demo/preprocess/store.h5" runs/stall/preprocess/store.h5
  DOWNSCALE_TEST_STALL_RANK=0 DOWNSCALE_TEST_STALL_SECONDS=3 DOWNSCALE_TEST_STALL_WHERE=backward timeout 120 \
    "${mpi[@]}" -x DOWNSCALE_TEST_STALL_RANK -x DOWNSCALE_TEST_STALL_SECONDS -x DOWNSCALE_TEST_STALL_WHERE \
    "$bin" train --config configs/demo.yaml "${common[@]}" --set run.dir=runs/stall --set train.stall_warning_seconds=1 \
    --set train.allreduce_bucket_mb=0.001 > stall.log 2>&1 || { cat stall.log; fail "the stalled run failed"; }
  grep 'not there yet' stall.log | head -2
  grep -q 'rank 1\].*waiting [0-9]* s at collective #[0-9]* (gradients of step 0): ranks not there yet: 0$' stall.log ||
    { tail -20 stall.log; fail "rank 1 did not name rank 0 as missing"; }
else
  echo "skipped: no mpirun"
fi

echo "faults_validate: $failures failures"
[[ $failures -eq 0 ]]
