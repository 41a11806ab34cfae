# Sourced by the GPU CLI tests: exit 77 (ctest: skipped) when no NVIDIA GPU is visible, unless
# DOWNSCALE_REQUIRE_GPU=1 (scripts/gpu_check.sh on a GPU machine), where that is a failure.
skip() {
  if [[ ${DOWNSCALE_REQUIRE_GPU:-0} == 1 ]]; then echo "FAIL (DOWNSCALE_REQUIRE_GPU=1): $*"; exit 1; fi
  echo "skipped: $*"; exit 77
}
command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU' || skip "no NVIDIA GPU visible"
