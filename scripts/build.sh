#!/usr/bin/env bash
# Configures and builds downscale into build/ (Release, Ninja). Extra arguments go to cmake's
# configure step, e.g. scripts/build.sh -DDOWNSCALE_WITH_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$jobs"
