#!/usr/bin/env bash
# One binary for every node: the demo end to end on a machine where the CUDA libraries do not
# exist. A private mount namespace (unshare -m, or -rm without root) puts empty tmpfs over the
# CUDA toolkit's folders and /dev/null over any CUDA/NVIDIA library elsewhere; the CUDA plugin
# is still beside the binary, so it fails to load: run.device auto must run on the CPU with one
# line saying why, run.device cuda must stop with exit 2 naming the key and the reason.
#   usage: cuda_hidden.sh <downscale binary> <source dir>        (exit 77: skipped)
set -euo pipefail
bin=$(readlink -f "$1")
src=$(readlink -f "$2")

if [[ -z ${DS_IN_CUDA_HIDDEN_NS:-} ]]; then
  for un in "unshare -m" "unshare -rm"; do
    if $un true 2>/dev/null; then
      DS_IN_CUDA_HIDDEN_NS=1 exec $un bash "$0" "$@"
    fi
  done
  echo "skipped: this machine does not permit unshare -m (mount namespaces)"
  exit 77
fi

# --- inside the namespace: hide CUDA ---
for d in /usr/local/cuda /usr/local/cuda-* /opt/nvidia /usr/lib/x86_64-linux-gnu/nvidia; do
  [[ -d $d ]] && mount -t tmpfs none "$d"
done
for f in /usr/lib/x86_64-linux-gnu/lib{cuda,cudart,cudnn,cublas,nccl,nvidia}* /usr/lib64/lib{cuda,nvidia}*; do
  [[ -e $f ]] && mount --bind /dev/null "$f"
done
# Found nowhere, by any path the loader might take (ld.so.cache still names the old ones).
# Each path on its own: one `ls` of them all fails (and pipefail hid the rest) where one is gone.
for f in $(/sbin/ldconfig -p | awk '{print $NF}' | grep -E '/lib(cudnn|cublas|cudart)\.so' || true); do
  [[ -s $f ]] && { echo "CUDA library still visible: $f"; exit 1; }
done
unset LD_LIBRARY_PATH DOWNSCALE_CUDA_PLUGIN

plugin=$(dirname "$bin")/../lib/libdownscale_cuda.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp -r "$src/configs" .

"$bin" --help >/dev/null

for stage in synth fetch preprocess train predict evaluate; do
  echo "== downscale $stage (CUDA hidden)"
  # Two epochs: this is about where it runs, not how well (demo_pipeline.sh checks that).
  "$bin" "$stage" --config configs/demo.yaml --set run.device=auto --set train.epochs=2 2>&1 | tee "$stage.log"
done
test -s runs/demo/evaluate/scores.json
# One line saying why; with the plugin built, the reason is the loader's (a CUDA library missing).
grep -q 'run.device auto: running on the CPU: ' train.log || { echo "no line saying why the CPU"; exit 1; }
if [[ -e $plugin ]]; then
  grep -qE 'running on the CPU: the CUDA plugin does not load \(lib(cublas|cublasLt|cudnn)\.so[.0-9]*: cannot open' train.log ||
    { echo "the reason does not name the missing CUDA library"; exit 1; }
fi

# run.device cuda: exit 2, the key and the reason, nothing trained.
expect_usage() {
  local rc=0
  "$@" >out.log 2>&1 || rc=$?
  cat out.log
  [[ $rc == 2 ]] || { echo "exit $rc, expected 2: $*"; exit 1; }
  grep -q "run.device" out.log || { echo "the error does not name run.device"; exit 1; }
}
expect_usage "$bin" train --config configs/demo.yaml --set run.device=cuda
grep -q "no GPU can be used: " out.log || { echo "no reason given"; exit 1; }
# DOWNSCALE_CUDA_PLUGIN names the plugin; a wrong one is the reason.
DOWNSCALE_CUDA_PLUGIN=/nonexistent/libdownscale_cuda.so \
  expect_usage "$bin" train --config configs/demo.yaml --set run.device=cuda
grep -q "/nonexistent/libdownscale_cuda.so" out.log || { echo "DOWNSCALE_CUDA_PLUGIN not used"; exit 1; }
echo "the demo ran with the CUDA libraries hidden"
