#!/usr/bin/env bash
# The demo from the bundle (scripts/bundle.sh ships this as scripts/demo.sh): nothing to install
# or build. Runs synth -> fetch -> preprocess -> train -> predict -> evaluate on the bundle's
# configs/demo.yaml, in a folder of the user's (default: ./downscale-demo, made if missing), with
# the bundle's environment (bin/env.sh). Extra arguments go to every stage (--set train.epochs=3).
#   ~/downscale-*/scripts/demo.sh [FOLDER] [--set key=value ...]
set -euo pipefail
bundle=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd -P)
dir=downscale-demo
if [[ $# -gt 0 && $1 != -* ]]; then dir=$1; shift; fi
mkdir -p "$dir/configs"
cd "$dir"
# The demo's config, and the dataset definitions beside it: the folder runs on its own.
cp "$bundle/configs/demo.yaml" configs/
cp -r "$bundle/configs/datasets" configs/
start=$(date +%s)
for stage in synth fetch preprocess train predict evaluate; do
  echo "== downscale $stage --config configs/demo.yaml $*"
  "$bundle/bin/env.sh" "$bundle/bin/downscale" "$stage" --config configs/demo.yaml "$@"
done
echo "== demo finished in $(( $(date +%s) - start )) s in $(pwd -P). Outputs:"
echo "   trained model       runs/demo/train/ (checkpoint_best.h5, metrics.csv, tensorboard/)"
echo "   precipitation       runs/demo/predict/precipitation.nc"
echo "   evaluation          runs/demo/evaluate/ (scores.json, scores.csv, scores.nc, maps)"
