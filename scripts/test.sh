#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs the Debian packages, builds, runs ctest.
# GPU tests report themselves skipped on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd build
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
ctest --output-on-failure -j "${JOBS:-$(nproc)}" "$@" | tee "$log" || rc=$?
# ctest hides a skipped test's own output; say here why the GPU tests did not run.
skipped=$(grep -cE '(Cuda|_gpu|gpu_|_nccl).*\(Skipped\)' "$log" || true)  # gtests and the CLI tests that need a GPU
if [[ $skipped -gt 0 ]]; then
  if [[ -e lib/libdownscale_cuda.so ]]; then
    echo "GPU tests: $skipped skipped (no GPU on this machine; the CUDA backend was compiled and linked)"
  else
    echo "GPU tests: $skipped skipped (the CUDA backend was not built: no CUDA toolkit with cuDNN and NCCL found," \
      "or -DDOWNSCALE_WITH_CUDA=OFF; see the configure output's 'downscale: CUDA backend' line)"
  fi
fi
if grep -q 'slurm_e2e.*(Skipped)' "$log"; then
  echo "slurm_e2e: skipped (Slurm could not be installed or started here; see its output: ctest -R slurm_e2e -V)"
fi
exit $rc
