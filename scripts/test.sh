#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs the Debian packages, builds, runs ctest.
# GPU tests report themselves skipped on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
