#!/usr/bin/env bash
# scripts/gpu_check.sh rehearsed without a GPU (GPU_CHECK_REHEARSAL=1: the CPU backend at tiny
# sizes), so a bash or parsing slip in it shows here and not in a GPU session's one device call.
#  1. sections parity, profile, curves, nccl and variants: exit 0 and a report whose every parsed
#     line has its values: the parity count, the TF32/BF16 profile side by side
#     (bench/profile_compare.py), the per-pass block (empty on the CPU, said so), the scaling
#     table, the loss-curve table (a precision+act16+nhwc column too) and its comparisons with the CPU
#     and with FP32 over every step, bench_train_ddp's figures, the switch table;
#  2. BUDGET spent before the first section: every section reported as not run, exit 1, the report
#     still written.
#  3. an unknown section: exit 2 before any work;
#  4. a precision whose loss curve strays from FP32's (a wrapped bench_train_step): exit 1, named;
#  5. a skipped step (FP16's loss scaling) in a curve: compared at the same number of updates.
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
SECTIONS="parity profile curves nccl variants sanitize" CURVE_MATHS="fp32 tf32 tf32+act16+nhwc" REPORT=$work/report.md bash root/scripts/gpu_check.sh root > out.txt 2>&1 || rc=$?
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
grep -qE '^\| step \| GPU FP32 \| GPU TF32 \| GPU TF32\+ACT16\+NHWC \| CPU FP32 \(oneDNN\) \|$' $r &&
  grep -qE '^\| 0 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$' $r || fail "loss-curve table has an empty cell in step 0"
grep -qE '^largest relative difference from the CPU: GPU FP32 [0-9.e+-]+ \(limit 1e-3\)$' $r || fail "no FP32 comparison"
# Every step of each precision against FP32 (the CPU computes tf32 in FP32: the same curve, 0).
for c in TF32 'TF32\+ACT16\+NHWC'; do
  grep -qE "^against the GPU's FP32 over 3 steps: GPU $c worst step 0 \(limit 2e-2\), loss [0-9.]+ -> [0-9.]+ against [0-9.]+ -> [0-9.]+ \(fall off by 0 of FP32's, limit 0.15\)$" $r ||
    fail "no comparison of $c with FP32 over every step"
done
grep -qE '^bench_train_ddp --communicator mpi --allreduce-dtype fp32: .*step_s [0-9.]+ samples_per_s [0-9.]+' $r ||
  fail "no bench_train_ddp figures"
grep -q 'training through NCCL (run.communicator nccl): skipped (no GPU)' $r || fail "train_nccl's skip not reported"
grep -q '^compute-sanitizer: skipped (rehearsal: no GPU)$' $r || fail "no sanitize section"
grep -q '^\*\*Result: passed\*\*$' $r || fail "no passed result"
[[ ! -e report.md.tmp ]] || fail "report.md.tmp left behind"

# 1b. VARIANTS with settings joined by '+' (one run, both set), and e2e in each of E2E_MATHS for
# each of E2E_DOD (a few seconds on the demo config)
rc=0
SECTIONS="variants e2e" MATHS=tf32 VARIANTS="default DOWNSCALE_CUDA_LANES=0+DOWNSCALE_CUDA_FUSE=0" E2E_MATHS="fp32 tf32+act16+nhwc" \
  E2E_DOD=true REPORT=$work/report_b.md bash root/scripts/gpu_check.sh root > out_b.txt 2>&1 || rc=$?
[[ $rc == 0 ]] || { cat out_b.txt; fail "variants/e2e: exit $rc, expected 0"; }
r=report_b.md
grep -qE '^tf32 +DOWNSCALE_CUDA_LANES=0\+DOWNSCALE_CUDA_FUSE=0 +[0-9.]+ +[0-9.]+$' $r || fail "no row for a joined VARIANTS entry"
[[ $(grep -cE '^tf32 ' $r) == 2 ]] || fail "VARIANTS: expected 2 rows"
for m in fp32 'tf32\+act16\+nhwc'; do
  grep -qE "^$m, train.data_on_device true: training data in " $r || fail "no e2e run in $m"
  grep -qE "^  200 North America epochs \(8,766 samples each\) in $m at this run's [0-9.]+ samples/s" $r ||
    fail "no 200-epoch line in $m"
done
grep -q 'data_on_device false' $r && fail "E2E_DOD=true ran data_on_device false too"
grep -q '^\*\*Result: passed\*\*$' $r || fail "variants/e2e: no passed result"

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
# 4. and 5. a bench_train_step whose tf32 curve is edited (CURVE_EDIT), standing in for a GPU:
#  4. scale: the losses after the first 10 % higher (a 16-bit kernel that computes wrong
#     gradients): the check fails, naming the precision;
#  5. skip: step 0 skipped as FP16's loss scaling skips an overflowing step (skip_0; the weights
#     stay, so each later loss is FP32's one step earlier): aligned on updates, it passes.
mkdir -p root2/bin
for p in root/bin/*; do [[ ${p##*/} == bench_train_step ]] || ln -s "$(readlink -f "$p")" root2/bin/; done
for d in scripts configs bench tests; do ln -s "$(readlink -f "root/$d")" root2/$d; done
real=$(readlink -f root/bin/bench_train_step)
cat > root2/bin/bench_train_step <<EDIT
#!/usr/bin/env bash
[[ " \$* " == *" --math tf32 "* ]] || exec "$real" "\$@"
"$real" "\$@" | awk -v edit="\$CURVE_EDIT" '
  edit == "scale" && /^loss_/ && \$1 != "loss_0" { \$2 = \$2 * 1.1 }
  edit == "skip" && /^loss_/ { i = substr(\$1, 6) + 0; l[i] = \$2
                               if (i == 0) print \$0 "\\nskip_0"; else print "loss_" i, l[i - 1]; next }
  { print }'
exit \${PIPESTATUS[0]}
EDIT
chmod +x root2/bin/bench_train_step
rc=0
CURVE_EDIT=scale SECTIONS=curves CPU_CURVE=0 CURVE_MATHS="fp32 tf32" REPORT=$work/stray.md bash root/scripts/gpu_check.sh root2 > out.txt 2>&1 || rc=$?
[[ $rc == 1 ]] || { cat out.txt; fail "a straying TF32 curve: exit $rc, expected 1"; }
grep -qE "^against the GPU's FP32 over 3 steps: GPU TF32 worst step 0.1[0-9]* \(limit 2e-2\)" stray.md &&
  grep -qF 'Result: FAILED** (TF32 loss curve vs GPU FP32' stray.md || { cat stray.md; fail "a straying TF32 curve not reported"; }
rc=0
CURVE_EDIT=skip SECTIONS=curves CURVE_MATHS="fp32 tf32" REPORT=$work/skip.md bash root/scripts/gpu_check.sh root2 > out.txt 2>&1 || rc=$?
[[ $rc == 0 ]] && grep -qE "^largest relative difference from the CPU: GPU TF32 0 \(limit 2e-2\)$" skip.md &&
  grep -qE "^against the GPU's FP32 over 3 steps: GPU TF32 worst step 0 \(limit 2e-2\), loss ([0-9.]+) -> ([0-9.]+) against \1 -> \2 " skip.md ||
  { cat out.txt skip.md; fail "a skipped step not aligned on the updates (exit $rc)"; }
echo "gpu_check rehearsal: passed"
