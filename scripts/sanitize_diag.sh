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
#   algos_plain.txt, algos_memcheck.txt   cuDNN's API log, the algorithm of each convolution call:
#                  a different (transform) algorithm under the sanitizer is its timing's choice.
#   initcheck.txt  reads of device memory nothing wrote.
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

for mode in plain memcheck; do
  sanitizer=()
  [[ $mode == memcheck ]] && sanitizer=("$cs" --tool memcheck)
  rm -f "/tmp/cudnn_$mode.log"
  CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG="/tmp/cudnn_$mode.log" timeout 240 \
    bash -c "$(declare -f test_model); bundle='$bundle' t='$t' test_model ${sanitizer[*]}" > "/tmp/diag_$mode.txt" 2>&1
  echo "exit $?" >> "/tmp/diag_$mode.txt"
  grep -E -A3 "$keep|^=========|^exit " "/tmp/diag_$mode.txt" | tail -c 30000 > "$out/$mode.txt"
  # cuDNN 9's API log: each call's name, then its arguments (the algorithm among them).
  grep -E -A40 'function cudnnConvolution(Forward|BackwardData|BackwardFilter)\(' "/tmp/cudnn_$mode.log" 2>/dev/null |
    grep -E 'function cudnnConvolution|algo' | tail -c 30000 > "$out/algos_$mode.txt"
done
timeout 240 bash -c "$(declare -f test_model); bundle='$bundle' t='$t' test_model $cs --tool initcheck" 2>&1 |
  grep -E -A6 "$keep|^=========" | tail -c 30000 > "$out/initcheck.txt"
echo "sanitize_diag.sh: wrote $(ls "$out" | tr '\n' ' ')in $out"
