#!/usr/bin/env bash
# The demo, end to end, from a fresh clone: installs the Debian packages the build needs (not the
# test suite's: Slurm, CDO, NCO, ...; scripts/test.sh adds those), builds, then runs
#   synth -> fetch -> preprocess -> train -> predict -> evaluate
# on configs/demo.yaml. Extra arguments are passed to every stage (e.g. --set train.epochs=3).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --build-only
bash scripts/build.sh
config=configs/demo.yaml
start=$(date +%s)
for stage in synth fetch preprocess train predict evaluate; do
  echo "== downscale $stage --config $config $*"
  build/pipeline/downscale "$stage" --config "$config" "$@"
done
# Where the outputs went: the config's folders, or the last --set of run.dir, synth.dir or
# train.name given to this script (the stages take the last one too; a named model's outputs
# are in a folder of that name under train/, predict/ and evaluate/).
run_dir=runs/demo synth_dir=data/synth name=
for arg in "$@"; do
  case "$arg" in
    run.dir=*) run_dir=${arg#run.dir=} ;;
    synth.dir=*) synth_dir=${arg#synth.dir=} ;;
    train.name=*) name=${arg#train.name=} ;;
  esac
done
sub=${name:+/$name}
echo "== demo finished in $(( $(date +%s) - start )) s. Outputs:"
echo "   synthetic sources   $synth_dir/"
echo "   fetched subsets     $run_dir/fetch/"
echo "   training store      $run_dir/preprocess/store.h5"
echo "   trained model       $run_dir/train$sub/ (checkpoint_best.h5, metrics.csv, tensorboard/)"
echo "   precipitation       $run_dir/predict$sub/precipitation.nc (and scores.json beside it)"
echo "   evaluation          $run_dir/evaluate$sub/ (scores.json, scores.csv, scores.nc, scores_table.png, maps, summary.png)"
