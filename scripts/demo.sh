#!/usr/bin/env bash
# The demo, end to end, from a fresh clone: installs the Debian packages, builds, then runs
#   synth -> fetch -> preprocess -> train -> predict -> evaluate
# on configs/demo.yaml. Extra arguments are passed to every stage (e.g. --set train.epochs=3).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
config=configs/demo.yaml
start=$(date +%s)
for stage in synth fetch preprocess train predict evaluate; do
  echo "== downscale $stage --config $config $*"
  build/pipeline/downscale "$stage" --config "$config" "$@"
done
echo "== demo finished in $(( $(date +%s) - start )) s. Outputs:"
echo "   synthetic sources   data/synth/"
echo "   fetched subsets     runs/demo/fetch/"
echo "   training store      runs/demo/preprocess/store.h5"
echo "   trained model       runs/demo/train/ (checkpoint_best.h5, metrics.csv, tensorboard/)"
echo "   precipitation       runs/demo/predict/precipitation.nc (and predict/scores.json)"
echo "   evaluation          runs/demo/evaluate/ (scores.json, scores.csv, scores.nc, scores_table.png, maps, summary.png)"
