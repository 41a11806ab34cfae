#!/usr/bin/env bash
# The demo pipeline end to end, as a new user runs it: synth -> fetch -> preprocess -> train ->
# predict on configs/demo.yaml (in a scratch folder), then checks that every output opens with
# the standard tools and that the test-period score beats climatology.
#   usage: demo_pipeline.sh <downscale binary> <source dir>
set -euo pipefail
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp -r "$src/configs" .
start=$(date +%s)
for stage in synth fetch preprocess train predict evaluate; do
  echo "== downscale $stage"
  extra=()
  [[ $stage == predict ]] && extra=(--set predict.members=2)
  [[ $stage == train ]] && extra=(--timeline runs/demo/train/timeline.json)  # for check_outputs.sh
  "$bin" "$stage" --config configs/demo.yaml "${extra[@]}"
done
echo "demo pipeline took $(( $(date +%s) - start )) s"

# header_has <pattern> <command...>: the header printed by the command contains the pattern.
# (The header goes to a variable first: `cmd | grep -q` would fail under pipefail on SIGPIPE.)
header_has() {
  local pattern=$1 header
  shift
  header=$("$@") || { echo "failed: $*"; exit 1; }
  grep -qF -- "$pattern" <<<"$header" || { echo "'$pattern' not in: $*"; exit 1; }
}
header_has 'float z(time, plev, lat, lon)' ncdump -h data/synth/era_interim_synth.nc
header_has 'pr:units = "kg m-2 s-1"' ncdump -h data/synth/ewembi_synth.nc
header_has 'level_hPa = 500' ncdump -h 'runs/demo/fetch/predictors/z@500.nc'
# Fetched files: CF-1.8, the source's names (or the quantity's where fetch converted it), a
# scalar plev in Pa (CDO sees the level), and the command line that made them in history.
header_has ':Conventions = "CF-1.8"' ncdump -h 'runs/demo/fetch/predictors/z@500.nc'
header_has 'z:standard_name = "geopotential"' ncdump -h 'runs/demo/fetch/predictors/z@500.nc'
# pr: kg m-2 s-1 in the source, mm/day written (a depth of water per day): another standard name.
header_has 'pr:standard_name = "lwe_precipitation_rate"' ncdump -h runs/demo/fetch/predictand/pr.nc
header_has 'plev = 50000' ncdump -v plev 'runs/demo/fetch/predictors/z@500.nc'
header_has '50000' cdo -s showlevel 'runs/demo/fetch/predictors/z@500.nc'
header_has 'downscale fetch --config configs/demo.yaml' ncdump -h 'runs/demo/fetch/predictors/z@500.nc'
header_has 'downscale predict --config configs/demo.yaml' ncdump -h runs/demo/predict/precipitation.nc
header_has 'DATASET "x"' h5dump -H runs/demo/preprocess/store.h5
header_has 'GROUP "weights"' h5dump -H runs/demo/train/checkpoint_best.h5
header_has 'pr:standard_name = "precipitation_flux"' ncdump -h runs/demo/predict/precipitation.nc
header_has 'float pr_stochastic(time, member, lat, lon)' ncdump -h runs/demo/predict/precipitation.nc
test -s runs/demo/train/metrics.csv

# The product opens in the tools climate scientists use: CDO, and xarray (Debian's python3).
header_has 'pr_stochastic' cdo -s showname runs/demo/predict/precipitation.nc
header_has 'time : 366 steps' cdo -s sinfo runs/demo/predict/precipitation.nc
/usr/bin/python3 - <<'PY'
import xarray as xr
ds = xr.open_dataset("runs/demo/predict/precipitation.nc")  # decodes CF time and _FillValue
assert ds.pr.attrs["standard_name"] == "precipitation_flux" and ds.pr.attrs["units"] == "kg m-2 s-1"
assert str(ds.time.values[0])[:10] == "2004-01-01", ds.time.values[0]
assert ds.pr.isnull().any() and float(ds.pr.min()) >= 0  # ocean is missing, land non-negative
assert ds.pr_stochastic.sizes["member"] == 2
print("xarray reads", dict(ds.sizes))
PY

# Prediction from new predictor files (as for a GCM run): fetch 2003-2004 into another run
# folder; predict must prepare them exactly as the store's inputs, so on 2004, the store's test
# year, it must reproduce the test-split prediction (tolerance: float32 network output, batches
# composed differently).
"$bin" fetch --config configs/demo.yaml --set run.dir=runs/gcm --set fetch.years=[2003,2004]
"$bin" predict --config configs/demo.yaml --set predict.predictors=runs/gcm/fetch --set predict.members=2
/usr/bin/python3 - <<'PY'
import numpy as np, xarray as xr
new = xr.open_dataset("runs/demo/predict/precipitation_gcm.nc")
test = xr.open_dataset("runs/demo/predict/precipitation.nc")
assert new.sizes["time"] == 731, new.sizes
a = new.p_wet.sel(time=test.time).values
b = test.p_wet.values
assert np.array_equal(np.isnan(a), np.isnan(b))
d = np.nanmax(np.abs(a - b))
assert d < 1e-5, d
print("new predictors reproduce the test-split prediction: max |dp| = %.2g" % d)
PY
# The same run a block of days at a time (predict.block_days 40: blocks of 64 days, two batches;
# the default on this grid is one block): every variable, the stochastic members included, the
# same to the bit. A fetch.season set on predict changes nothing, and predict says so.
cp runs/demo/predict/precipitation_gcm.nc one_block.nc
"$bin" predict --config configs/demo.yaml --set predict.predictors=runs/gcm/fetch --set predict.members=2 \
  --set predict.block_days=40 --set 'fetch.season=[6, 7, 8]' 2>&1 | tee blocks.log | grep -F 'a block)'
grep -qF '731 days, 2 members, 64 a block' blocks.log || { echo "predict.block_days 40 did not give blocks of 64 days"; exit 1; }
grep -qF -- "--set fetch.season=[6, 7, 8]: predict does not read fetch.season" blocks.log ||
  { echo "predict did not say that fetch.season is not its key"; exit 1; }
/usr/bin/python3 - <<'PY'
import numpy as np, xarray as xr
a = xr.open_dataset("one_block.nc", mask_and_scale=False)
b = xr.open_dataset("runs/demo/predict/precipitation_gcm.nc", mask_and_scale=False)
for v in ("pr", "pr_expected", "p_wet", "gamma_shape", "gamma_scale", "pr_stochastic"):
    assert a[v].shape == b[v].shape and np.array_equal(a[v].values, b[v].values), v
print("blocks of 64 days write the file of one block:", dict(b.sizes))
PY

# Stochastic members of an undertrained model (one epoch): their expected precipitation passes
# the level check, but a box the model calls nearly dry has a gamma scale of hundreds of mm/day,
# and 50 members draw thousands (2435 mm/day, 6.9 times the largest training observation, when
# written): a warning naming the draw. The trained demo model's 50 members (1.4 times) get none.
# Two threads pinned: the weights, and with them which draws come out, depend on the thread count.
"$bin" train --config configs/demo.yaml --set train.epochs=1 --set train.name=one_epoch --set run.threads=2 -q
"$bin" predict --config configs/demo.yaml --set train.name=one_epoch --set predict.members=50 --set run.threads=2 \
  > members.log 2>&1 ||
  { cat members.log; echo "predict of the one-epoch model failed"; exit 1; }
grep -qE 'stochastic member [0-9]+ reaches [0-9]+ mm/day on 2004-.* times the largest training observation' members.log ||
  { cat members.log; echo "no warning about the one-epoch model's members"; exit 1; }
"$bin" predict --config configs/demo.yaml --set predict.members=50 --set predict.predictors=runs/gcm/fetch \
  --set predict.label=members50 > members.log 2>&1 || { cat members.log; echo "predict of 50 members failed"; exit 1; }
if grep -qF 'stochastic member' members.log; then cat members.log; echo "a warning about the trained model's members"; exit 1; fi
rm -r runs/demo/train/one_epoch runs/demo/predict/one_epoch runs/demo/predict/precipitation_members50.nc

# Evaluation: report, table and maps exist; the CNN beats the climatology baseline's RMSE.
for f in scores.json scores.csv scores.nc scores_table.png observed_mean.png predicted_mean.png bias.png rocss.png summary.png; do
  test -s "runs/demo/evaluate/$f" || { echo "missing evaluate/$f"; exit 1; }
done
# The maps are PNGs with Natural Earth's coastlines: evaluate again without the data (a warning,
# exit 0, the maps still drawn) and compare. Coastline pixels: near-black in the map with the
# data, not in the one without (the demo's box holds the Gulf coast and the Mexican border).
if [[ -e /usr/share/magics/50m/ne_50m_land.shp || -n ${DOWNSCALE_NATURAL_EARTH-} ]]; then
  cp runs/demo/evaluate/observed_mean.png with_coast.png
  DOWNSCALE_NATURAL_EARTH=/nonexistent "$bin" evaluate --config configs/demo.yaml > no_coast.log 2>&1 ||
    { cat no_coast.log; echo "evaluate failed without Natural Earth data"; exit 1; }
  grep -q "maps drawn without coastlines" no_coast.log || { cat no_coast.log; echo "no warning about the missing coastlines"; exit 1; }
  /usr/bin/python3 - <<'PY'
import numpy as np
from PIL import Image
for name in ("observed_mean", "predicted_mean", "bias", "rocss", "summary", "scores_table"):
    with Image.open("runs/demo/evaluate/%s.png" % name) as im:
        assert im.format == "PNG", (name, im.format)
a = np.asarray(Image.open("with_coast.png").convert("RGB")).max(axis=2)
b = np.asarray(Image.open("runs/demo/evaluate/observed_mean.png").convert("RGB")).max(axis=2)
assert a.shape == b.shape, (a.shape, b.shape)
coast = int(((a < 60) & (b >= 60)).sum())  # near-black with the data, not without
assert coast > 100, "only %d coastline pixels in observed_mean.png" % coast
print("maps: %d coastline pixels in observed_mean.png %s, none without Natural Earth data" % (coast, a.shape))
PY
else
  echo "skipped the coastline check: no Natural Earth data (scripts/install-deps.sh installs libmagics++-data)"
fi
/usr/bin/python3 - <<'PY'
import json
report = json.load(open("runs/demo/evaluate/scores.json"))
# What was scored against what: the prediction, its checkpoint, the store and the test period.
assert report["prediction"] == "runs/demo/predict/precipitation.nc", report["prediction"]
assert report["checkpoint"] == "runs/demo/train/checkpoint_best.h5", report["checkpoint"]
assert report["observations"] == "runs/demo/preprocess/store.h5 (test split)", report["observations"]
assert report["test_period"] == "2004-01-01..2004-12-31", report["test_period"]
# How the prediction made its wet days and members (predict.occurrence, predict.seed's default).
assert report["prediction_wet_days"].startswith("wet where p_wet reaches the per-box threshold"), report
assert report["members_seed"] == "1", report
s = report["methods"]
for name in ("cnn_deterministic", "cnn_expected", "cnn_stochastic", "climatology", "linear_pcs"):
    assert name in s, name
assert s["cnn_expected"]["RMSE"] < s["climatology"]["RMSE"], s
print("evaluate: RMSE cnn_expected %.3f, climatology %.3f, linear %.3f" %
      (s["cnn_expected"]["RMSE"], s["climatology"]["RMSE"], s["linear_pcs"]["RMSE"]))
PY
if [[ -n $(find runs data -name '*.tmp-*') ]]; then echo "temporary files left behind"; exit 1; fi

# Every output opened by CDO, NCO, xarray, the CF check and the trace check (issue 16, item 6).
bash "$src/tests/cli/check_outputs.sh" "$src"

skill=$(sed -n 's/.*"mse_skill_score_vs_climatology": \([-0-9.e]*\).*/\1/p' runs/demo/predict/scores.json)
echo "MSE skill score against climatology: $skill"
awk -v s="$skill" 'BEGIN { exit !(s > 0) }' || { echo "the demo does not beat climatology"; exit 1; }
