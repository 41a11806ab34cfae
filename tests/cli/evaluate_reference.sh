#!/usr/bin/env bash
# `downscale evaluate` against an independent reference (tests/cli/evaluate_reference.py: numpy on
# fetch/predictand/pr.nc and predict/precipitation.nc, the VALUE definitions): every per-box field
# of scores.nc, every domain mean and median of scores.json and scores.csv, for the CNN's three
# outputs (two stochastic members) and the climatology baseline; linear_pcs's aggregation; the
# same for the seasons DJF and JJA (evaluate.seasons), whose maps are drawn too.
# A tiny demo run of its own (1 epoch) so that no other test's run folder is needed. About 15 s.
#   usage: evaluate_reference.sh <downscale binary> <source dir>
set -euo pipefail
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp -r "$src/configs" .
for stage in synth fetch preprocess train predict evaluate; do
  # One thread: the suite runs tests side by side. Two test years, so that spells and DJF meet a
  # year boundary (31 December 2003 to 1 January 2004) end to end, and each annual max spell is
  # the median of two years.
  extra=(--set run.threads=1 --set "preprocess.validation_years=[]" --set "preprocess.test_years=[2003, 2004]")
  [[ $stage == train ]] && extra+=(--set train.epochs=1)
  [[ $stage == predict ]] && extra+=(--set predict.members=2)
  # Two seasons besides annual: DJF crosses the years' ends (its days run from January 2003 to
  # December 2004, with December 2003 next to January 2004), JJA does not.
  [[ $stage == evaluate ]] && extra+=(--set "evaluate.seasons=[annual, DJF, JJA]")
  "$bin" "$stage" --config configs/demo.yaml "${extra[@]}" > "$stage.log" 2>&1 ||
    { cat "$stage.log"; echo "downscale $stage failed"; exit 1; }
done
# The demo's training years (configs/demo.yaml: preprocess.train_years) for the climatology.
/usr/bin/python3 "$src/tests/cli/evaluate_reference.py" runs/demo 2000 2002 DJF,JJA
# Each season's score table beside the annual one, and its maps and summary (PNGs of the annual
# maps' size, not blank; none for a season not asked).
for season in DJF JJA; do
  [[ -s runs/demo/evaluate/scores_table_$season.png ]] || { echo "no scores_table_$season.png"; exit 1; }
done
[[ ! -e runs/demo/evaluate/scores_table_MAM.png ]] || { echo "scores_table_MAM.png written for a season not asked"; exit 1; }
/usr/bin/python3 "$src/tests/cli/season_maps_check.py" runs/demo/evaluate DJF,JJA
# The seasonal fields are CF too (climatological time axes, CF 7.4).
/usr/bin/python3 "$src/tests/cli/cf_check.py" runs/demo/evaluate/scores.nc
