#!/usr/bin/env bash
# scripts/gpu_check.sh rehearsed without a GPU (GPU_CHECK_REHEARSAL=1: the CPU backend at tiny
# sizes), so a bash or parsing slip in it shows here and not in a GPU session's one device call.
#  1. sections parity, profile, curves, nccl and variants: exit 0 and a report whose every parsed
#     line has its values: the parity count, the TF32/BF16 profile side by side
#     (bench/profile_compare.py), the per-pass block (empty on the CPU, said so), the scaling
#     table, the loss-curve table and its comparison, bench_train_ddp's figures, the switch table;
#  2. BUDGET spent before the first section: every section reported as not run, exit 1, the report
#     still written.
#  3. an unknown section: exit 2 before any work.
# The sections that need PyTorch or take minutes here (bench, e2e, imagenet) are rehearsed by hand:
#   GPU_CHECK_REHEARSAL=1 REPORT=/tmp/r.md scripts/gpu_check.sh .     (about 3 minutes on 2 cores)
#   usage: gpu_check_rehearsal.sh <source dir> <downscale> <test_model> <test_train> <bench_train_step> <bench_train_ddp>
set -euo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A bundle-shaped root: bin/ with the programs under test, the source's scripts, configs, bench, tests.
mkdir -p "$work/root/bin"
for p in "${@:2}"; do ln -s "$(readlink -f "$p")" "$work/root/bin/"; done
for d in scripts configs bench tests; do ln -s "$(readlink -f "$src/$d")" "$work/root/$d"; done
cd "$work"
fail() { echo "FAIL: $*"; cat report.md 2>/dev/null || true; exit 1; }
export GPU_CHECK_REHEARSAL=1 PY=${PY:-/usr/bin/python3}

# 1. the sections that run in seconds here
rc=0
SECTIONS="parity profile curves nccl variants sanitize" REPORT=$work/report.md bash root/scripts/gpu_check.sh root > out.txt 2>&1 || rc=$?
[[ $rc == 0 ]] || { cat out.txt; fail "exit $rc, expected 0"; }
r=report.md
grep -q '^# GPU check: rehearsal on the CPU' $r || fail "no title"
grep -qE '^passed: [1-9][0-9]* tests, skipped: [0-9]+$' $r || fail "no parity count"
grep -q '^device check (MNN, batch 32, every precision and path): passed$' $r &&
  grep -q 'SKIPPED.*DeviceCheckCuda.MnnStepPassesInEveryPrecisionAndPath' $r || fail "no device-check line"
grep -qE '^\| backward head \(ms\) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$' $r || fail "no TF32/BF16 profile table"
grep -qE '^\| forward head \(ms\) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$' $r || fail "no per-layer forward rows"
grep -q 'nodes  gpus  ranks' $r || fail "no scaling table"
grep -q '^convolution passes (bf16):$' $r && grep -q '^(no per-pass times: the cpu backend has none)$' $r ||
  fail "no per-pass block"
grep -qE '^tf32 +default +[0-9.]+ +[0-9.]+$' $r && grep -qE '^tf32 +DOWNSCALE_FUSE_LAYERS=0 +[0-9.]+ +[0-9.]+$' $r &&
  grep -qE '^tf32 +DOWNSCALE_CUDA_NARROW_WINDOW=0 +[0-9.]+ +[0-9.]+$' $r ||
  fail "no switch table"
[[ -s report_profile.json && -s report_profile_bf16.json ]] || fail "profiles not kept beside the report"
grep -qE '^\| 0 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$' $r || fail "loss-curve table has an empty cell in step 0"
grep -qE '^largest relative difference from the CPU: GPU FP32 [0-9.e+-]+ \(limit 1e-3\)$' $r || fail "no FP32 comparison"
grep -qE '^bench_train_ddp --communicator mpi --allreduce-dtype fp32: .*step_s [0-9.]+ samples_per_s [0-9.]+' $r ||
  fail "no bench_train_ddp figures"
grep -q 'training through NCCL (run.communicator nccl): skipped (no GPU)' $r || fail "train_nccl's skip not reported"
grep -q '^compute-sanitizer: skipped (rehearsal: no GPU)$' $r || fail "no sanitize section"
grep -q '^\*\*Result: passed\*\*$' $r || fail "no passed result"
[[ ! -e report.md.tmp ]] || fail "report.md.tmp left behind"

# 2. no time left: nothing runs, the report says so
rc=0
SECTIONS="parity curves" BUDGET=1 REPORT=$work/budget.md bash root/scripts/gpu_check.sh root > out.txt 2>&1 || rc=$?
[[ $rc == 1 ]] || { cat out.txt; fail "BUDGET=1: exit $rc, expected 1"; }
grep -q '^## parity: not run' budget.md && grep -q '^## curves: not run' budget.md || fail "BUDGET=1: sections not reported as not run"
grep -q 'Result: FAILED.*not run for lack of BUDGET: parity curves' budget.md || fail "BUDGET=1: result does not name them"

# 3. a typo in SECTIONS
rc=0
SECTIONS="parity curvse" REPORT=$work/typo.md bash root/scripts/gpu_check.sh root > out.txt 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "unknown section 'curvse'" out.txt || { cat out.txt; fail "SECTIONS typo: exit $rc"; }
[[ ! -e typo.md && ! -e typo.md.tmp ]] || fail "SECTIONS typo still wrote a report"
echo "gpu_check rehearsal: passed"
