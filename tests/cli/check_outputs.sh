#!/usr/bin/env bash
# Every output of a demo run opened with the tools users use (issue 16, item 6), on the run
# demo_pipeline.sh just made (one demo for all checks: a second run would cost minutes):
#   - the CF check (cf_check.py: standard names against the CMIP6 tables and ecCodes, units
#     through udunits2, coordinates, cell_methods, Conventions) of the fetched files, the store,
#     the predictions and evaluate/scores.nc; it must also reject a file with known faults;
#   - NCO (ncks -m), ncdump -h and CDO (cdo sinfon) open every NetCDF output;
#   - xarray: fetched observations and the prediction align on every test day (one time
#     convention, 12:00 with bounds), the README's Python recipe runs verbatim;
#   - the training timeline follows Perfetto's slice rules (trace_check.py), which must also
#     reject a trace with known faults.
#   usage: check_outputs.sh <source dir>   (in the folder holding runs/demo)
set -euo pipefail
src=$1
run=runs/demo
py=/usr/bin/python3
fail() { echo "check_outputs: $*"; exit 1; }

fetched=("$run"/fetch/predictand/*.nc "$run"/fetch/predictors/*.nc)
products=("$run"/predict/*.nc "$run/evaluate/scores.nc")
echo "== CF check"
$py "$src/tests/cli/cf_check.py" "${fetched[@]}" "${products[@]}" || fail "CF check failed"
$py "$src/tests/cli/cf_check.py" --no-conventions "$run/preprocess/store.h5" || fail "CF check of the store failed"

# The check itself: a file with an unknown standard name, units that do not convert (to a CMIP6
# table's and to the supplement's), a coordinate without axis and a bad cell method must fail,
# naming each.
bad=$(mktemp --suffix=.nc)
$py - "$bad" <<'PY'
import sys, netCDF4
d = netCDF4.Dataset(sys.argv[1], "w")
d.Conventions = "CF-1.8"
d.createDimension("lat", 2)
lat = d.createVariable("lat", "f8", ("lat",)); lat.standard_name = "latitude"; lat.units = "degrees_north"
v = d.createVariable("pr", "f4", ("lat",)); v.standard_name = "precipitation_flux"; v.units = "mm day-1"
v.cell_methods = "time: average"
w = d.createVariable("w", "f4", ("lat",)); w.standard_name = "not_a_cf_name"; w.units = "1"
x = d.createVariable("x", "f4", ("lat",)); x.standard_name = "lwe_precipitation_rate"; x.units = "kg m-2 s-1"
d.close()
PY
rc=0
out=$($py "$src/tests/cli/cf_check.py" "$bad" 2>&1) || rc=$?
rm -f "$bad"
[[ $rc -eq 1 ]] || fail "cf_check passed a faulty file: $out"
for want in "do not convert to precipitation_flux" "do not convert to lwe_precipitation_rate's 'm s-1'" "not_a_cf_name" "without axis Y" "'average' is not a CF method"; do
  grep -qF -- "$want" <<<"$out" || fail "cf_check did not report '$want': $out"
done

echo "== NCO, ncdump, CDO open every output"
for f in "${fetched[@]}" "${products[@]}" "$run/preprocess/store.h5"; do
  ncks -m "$f" >/dev/null || fail "ncks -m $f"
  ncdump -h "$f" >/dev/null || fail "ncdump -h $f"
  # CDO reads the store's root group only (it supports no netCDF-4 groups) and says so.
  cdo -s sinfon "$f" >/dev/null 2>&1 || fail "cdo sinfon $f"
done
cdo -s sinfon "$run/evaluate/scores.nc" 2>&1 | grep -q "Bounds = true" || fail "scores.nc: CDO sees no time bounds"

echo "== xarray"
# The README's recipe, verbatim (the first python block after its heading), then checks on what
# it loaded.
rev=$(git -C "$src" rev-parse --short=7 HEAD 2>/dev/null || true)  # "" outside a checkout
recipe=$(awk '/^### Reading the outputs in Python/{f=1} f&&/^```python/{g=1;next} g&&/^```/{exit} g' "$src/README.md")
[[ -n $recipe ]] || fail "README has no Python recipe under 'Reading the outputs in Python'"
$py - <<PY
$recipe
import json
import numpy as np
assert not any(d.startswith("phony_dim") for d in train.dims), train.dims
assert x850.dims == ("time", "predictor_lat", "predictor_lon"), x850.dims
# One time convention: the observations (fetched for every year) and the prediction (the test
# year) share every test day once aligned.
full = xr.open_dataset(f"{run}/predict/precipitation.nc")
assert obs.sizes["time"] == full.sizes["time"] == 366, (obs.sizes, full.sizes)
assert str(obs.time.values[0])[:19] == "2004-01-01T12:00:00", obs.time.values[0]
fetched = xr.open_dataset(f"{run}/fetch/predictand/pr.nc")
assert "time_bnds" in fetched and float(fetched.time_bnds[0, 1] - fetched.time_bnds[0, 0]) > 0
z = xr.open_dataset(f"{run}/fetch/predictors/z@500.nc")
assert xr.align(z, full, join="inner")[0].sizes["time"] == 366
assert train.time.values[0].astype("datetime64[h]").astype(int) % 24 == 12, train.time.values[0]
# scores.nc: every method of scores.json, its CNN RMSE map's mean is the report's domain mean.
report = json.load(open(f"{run}/evaluate/scores.json"))
methods = sorted(report["methods"])
assert sorted(rmse[v].attrs["method"] for v in rmse.data_vars) == methods, (list(rmse.data_vars), methods)
mm_day = float(scores.rmse_cnn_expected.mean()) * 86400
assert abs(mm_day - report["methods"]["cnn_expected"]["RMSE"]) < 1e-4 * mm_day, (mm_day, report["methods"]["cnn_expected"])
med = float(np.nanmedian(scores.rmse_cnn_expected.values)) * 86400
assert abs(med - report["methods"]["cnn_expected"]["median"]["RMSE"]) < 1e-4 * med, med
assert scores.attrs["test_days"] == 366 and scores.attrs["test_period_start"] == "2004-01-01"
assert scores.mean_observed.attrs["cell_methods"] == "time: mean"
# scores.nc names the model and store it scored, as the prediction does.
for key in ("checkpoint", "checkpoint_sha256", "model_sha256", "store_identity"):
    assert scores.attrs[key] == full.attrs[key] and scores.attrs[key], (key, scores.attrs.get(key), full.attrs.get(key))
# The software version carries the git revision it was built from (in a checkout's build).
if "$rev":
    assert "+g$rev" in scores.attrs["source"], (scores.attrs["source"], "$rev")
print(f"xarray: {obs.sizes['time']} common days of observations and prediction; scores.nc has "
      f"{len(scores.data_vars)} per-box fields of {len(methods)} methods and the observations")
PY

echo "== trace"
$py "$src/tests/cli/trace_check.py" "$run/train/timeline.json" || fail "the timeline breaks Perfetto's rules"
bad=$(mktemp --suffix=.json)
cat >"$bad" <<'JSON'
{"traceEvents":[
{"name":"a","ph":"X","pid":1,"tid":0,"ts":0,"dur":10},
{"name":"b","ph":"X","pid":1,"tid":0,"ts":5,"dur":10},
{"name":"c","ph":"X","pid":0,"tid":0,"ts":0,"dur":1},
{"name":"d","ph":"X","pid":1,"tid":1,"ts":0.5,"dur":1},
{"name":"e","ph":"B","pid":1,"tid":2,"ts":3}]}
JSON
rc=0
out=$($py "$src/tests/cli/trace_check.py" "$bad" 2>&1) || rc=$?
rm -f "$bad"
[[ $rc -eq 1 ]] || fail "trace_check passed a faulty trace: $out"
for want in "overlaps 'a'" "pid 0" "not integer microseconds" "has no E"; do
  grep -qF -- "$want" <<<"$out" || fail "trace_check did not report '$want': $out"
done
echo "check_outputs: ok"
