#!/usr/bin/env bash
# Why a CUDA test fails under compute-sanitizer but passes without it (on a GPU machine, from the
# checkout, the bundle unpacked elsewhere):
#   scripts/sanitize_diag.sh BUNDLE_DIR OUT_DIR [GTEST_NAME]
#   (default: ModelCuda.Bf16Fp16FusedCastsWithReluMatchCpu, which failed under memcheck on an H100
#   on 2026-11-24 with 0 memcheck errors and only its name in the report)
# Writes into OUT_DIR, each to tell one cause from the others (docs/gpu.md, "The next GPU session"):
#   switches.txt   the test without the sanitizer with each timed path forced: the narrow kernels
#                  against cuDNN, the weight gradient by GEMM never/always. A forced path failing
#                  here is a path bug the timing normally avoids, not the sanitizer.
#   plain.txt, memcheck.txt   the test's own lines (which mode, layout, geometry, tensor; a C++
#                  exception instead of a tolerance miss), with the per-plan `cuda: conv` choices.
#   plans_plain.txt, plans_memcheck.txt, plans_notransforms.txt   every plan's choices, counted
#                  (sort | uniq -c): its cuDNN algorithms (mode, layout, geometry, cudnnFind or
#                  heuristic) and the later timed ones (narrow kernels, GEMM weight gradient, a
#                  refused algorithm's replacement), their milliseconds left out; plans.diff between
#                  plain and memcheck: other choices under the sanitizer are its timing's (FFT and
#                  Winograd, transforms, are allowed in 16 bits).
#   memcheck_notransforms.txt   the test under memcheck with DOWNSCALE_CUDA_TRANSFORMS=0 (no FFT
#                  or Winograd): passing here and failing in memcheck.txt is the algorithm the
#                  timing chose, not memory.
#   initcheck.txt  reads of device memory nothing wrote.
#   memcheck_filter.txt   last (the longest): memcheck over gpu_check's whole SANITIZE_FILTER with
#                  DOWNSCALE_CUDA_BN=kernels, as its sanitize section runs it: the tests before
#                  this one change what the timing sees. Cut by the caller's timeout, the rest stands.
set -uo pipefail
[[ $# -ge 2 ]] || { echo "usage: scripts/sanitize_diag.sh BUNDLE_DIR OUT_DIR [GTEST_NAME]" >&2; exit 2; }
bundle=$(cd "$1" && pwd) out=$2 t=${3:-ModelCuda.Bf16Fp16FusedCastsWithReluMatchCpu}
[[ -x $bundle/bin/test_model && -x $bundle/bin/env.sh ]] || { echo "sanitize_diag.sh: no bin/test_model in $bundle" >&2; exit 2; }
mkdir -p "$out"
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null) ||
  { echo "sanitize_diag.sh: compute-sanitizer not found" >&2; exit 2; }
keep='Failure|exception|what\(\)|worst error|cuda: conv|OK \]|FAILED|SKIPPED'
test_model() { DOWNSCALE_REQUIRE_GPU=1 "$bundle/bin/env.sh" "$@" "$bundle/bin/test_model" --gtest_filter="$t"; }

for v in DOWNSCALE_DIAG_DEFAULTS=1 DOWNSCALE_CUDA_NARROW=0 DOWNSCALE_CUDA_NARROW=1 DOWNSCALE_CUDA_WGRAD_GEMM=0 \
         DOWNSCALE_CUDA_WGRAD_GEMM=1; do
  echo "== $v"
  env "$v" timeout 120 bash -c "$(declare -f test_model); bundle='$bundle' t='$t' test_model" 2>&1 | grep -E -A3 "$keep"
done > "$out/switches.txt"

for mode in plain memcheck notransforms; do
  sanitizer=() switch=DOWNSCALE_DIAG_DEFAULTS=1
  [[ $mode != plain ]] && sanitizer=("$cs" --tool memcheck)
  [[ $mode == notransforms ]] && switch=DOWNSCALE_CUDA_TRANSFORMS=0
  env "$switch" timeout 240 \
    bash -c "$(declare -f test_model); bundle='$bundle' t='$t' test_model ${sanitizer[*]}" > "/tmp/diag_$mode.txt" 2>&1
  echo "exit $?" >> "/tmp/diag_$mode.txt"
  name=$mode
  [[ $mode == notransforms ]] && name=memcheck_notransforms
  # The test's own lines first (which mode, layout, tensor, how far off), then what is left of the
  # per-plan lines, which the plan counts below hold whole.
  { grep -E -A3 "Failure|exception|what\(\)|worst error|OK \]|FAILED|SKIPPED|^=========|^exit " "/tmp/diag_$mode.txt"
    grep -E "cuda: conv" "/tmp/diag_$mode.txt" | grep -v "cuDNN plan \["; } | head -c 30000 > "$out/$name.txt"
  grep -E "^cuda: conv" "/tmp/diag_$mode.txt" | sed -E 's/ *\((ms|times)[^)]*\)//g; s/[0-9]+\.[0-9]+ ?ms//g' |
    sort | uniq -c > "$out/plans_$mode.txt"
done
diff "$out/plans_plain.txt" "$out/plans_memcheck.txt" > "$out/plans.diff" && echo "the same plans" > "$out/plans.diff"
timeout 240 bash -c "$(declare -f test_model); bundle='$bundle' t='$t' test_model $cs --tool initcheck" 2>&1 |
  grep -E -A6 "$keep|^=========" | tail -c 30000 > "$out/initcheck.txt"
filter=${SANITIZE_FILTER:-$(grep -o 'filter=${SANITIZE_FILTER:-[^}]*' "$(dirname "$0")/gpu_check.sh" | cut -d- -f2-)}
# An empty filter would run no test and look clean.
[[ -n $filter ]] || { echo "sanitize_diag.sh: no SANITIZE_FILTER in scripts/gpu_check.sh" >&2; exit 2; }
DOWNSCALE_REQUIRE_GPU=1 DOWNSCALE_CUDA_BN=kernels timeout 300 "$bundle/bin/env.sh" "$cs" --tool memcheck \
  --error-exitcode 99 --print-limit 20 \
  "$bundle/bin/test_model" --gtest_filter="$filter" > /tmp/diag_filter.txt 2>&1
echo "exit $?" >> /tmp/diag_filter.txt
grep -E -A3 "Failure|exception|what\(\)|FAILED|^=========|^exit " /tmp/diag_filter.txt | head -c 30000 > "$out/memcheck_filter.txt"
echo "sanitize_diag.sh: wrote $(ls "$out" | tr '\n' ' ')in $out"
