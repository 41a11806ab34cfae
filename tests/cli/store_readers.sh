#!/usr/bin/env bash
# The training store read by tools other than ours: h5py (Debian's /usr/bin/python3, as a Python
# trainer would) and h5dump. Builds a small store with the real command (synth -> fetch ->
# preprocess on configs/demo.yaml, three years, conservative precipitation, deflated x), then
# checks layout, chunking, provenance and the standardization from Python. Also: a grid the
# fetched files do not cover ends in exit 3 with no store left behind.
#   usage: store_readers.sh <downscale binary> <source dir>
set -euo pipefail
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp -r "$src/configs" .
years=(--set "synth.years=[2000,2002]" --set "fetch.years=[2000,2002]" --set "preprocess.train_years=[2000,2000]"
       --set "preprocess.validation_years=[2001,2001]" --set "preprocess.test_years=[2002,2002]")
"$bin" synth --config configs/demo.yaml "${years[@]}"
"$bin" fetch --config configs/demo.yaml "${years[@]}"
"$bin" preprocess --config configs/demo.yaml "${years[@]}" --set preprocess.compression=4 \
  --set "preprocess.regrid={default: bilinear, pr: conservative}" --set preprocess.block_days=100
store=runs/demo/preprocess/store.h5
/usr/bin/python3 "$src/tests/cli/check_store.py" "$store" 4
header=$(h5dump -H "$store")
for want in 'DATASET "x"' 'H5T_IEEE_F32LE' 'ATTRIBUTE "regrid"' 'GROUP "stats"' 'DATASET "mask"'; do
  grep -qF -- "$want" <<<"$header" || { echo "h5dump -H lacks $want"; exit 1; }
done
h5dump -d /test/time -c 3 "$store" >/dev/null
# xarray (through netCDF-4) sees named dimensions with coordinates, not phony_dim_N: the README's
# recipe.
/usr/bin/python3 - "$store" <<'PY'
import sys
import numpy as np, xarray as xr
store = sys.argv[1]
train = xr.open_dataset(store, group="train")
root = xr.open_dataset(store)
assert train["x"].dims == ("time", "channel", "predictor_lat", "predictor_lon"), train["x"].dims
assert train["y"].dims == ("time", "lat", "lon") and train["obs"].dims == ("time", "lat", "lon"), train["y"].dims
assert not any(d.startswith("phony_dim") for d in train.dims), train.dims
assert list(train["channel"].values[:2]) == ["z@500", "z@700"], train["channel"].values[:4]
assert np.issubdtype(train["time"].dtype, np.datetime64) and str(train["time"].values[0])[:10] == "2000-01-01"
assert train["x"].attrs["units"] == "1" and train["lat"].attrs["units"] == "degrees_north"
assert root["mask"].dims == ("lat", "lon") and root["lat"].size == train["lat"].size
grid = xr.open_dataset(store, group="grid")  # the earlier layout's coordinates, named too
assert not any(d.startswith("phony_dim") for d in grid.dims), grid.dims
assert grid["obs_lat"].dims == ("obs_lat",) and grid["predictor_lon"].size == train["predictor_lon"].size
stats = xr.open_dataset(store, group="stats")  # the statistics with their own coordinates and units
assert stats["mean"].dims == ("channel", "predictor_lat", "predictor_lon"), stats["mean"].dims
assert not any(d.startswith("phony_dim") for d in stats.dims) and "lat" not in stats.coords, stats.coords
assert list(stats["channel"].values[:1]) == ["z@500"] and stats["predictor_lat"].attrs["units"] == "degrees_north"
units = dict(zip(stats["channel"].values, stats["channel_units"].values))
assert units["ta@850"] == "K" and units["z@500"] == "m2 s-2", units
sel = train["x"].sel(channel="ta@850").isel(time=0)
assert sel.dims == ("predictor_lat", "predictor_lon") and np.isfinite(sel.values).all()
print(f"xarray: train x {dict(train['x'].sizes)}, y {dict(train['y'].sizes)}, channels {list(train['channel'].values[:3])}...")
PY

# A predictor grid 10° west of the fetched box: exit 3, names the file, no store, no temporary.
rm "$store"
rc=0
err=$("$bin" preprocess --config configs/demo.yaml "${years[@]}" \
  --set "preprocess.predictor_grid={lon: [-120, -98], lat: [30, 44], step: 2.0}" \
  --set "preprocess.predictand_grid={lon: [-119.75, -97.75], lat: [29.75, 43.75], step: 0.5}" 2>&1) || rc=$?
[[ $rc -eq 3 ]] || { echo "expected exit 3, got $rc: $err"; exit 1; }
grep -q "does not cover" <<<"$err" || { echo "message lacks 'does not cover': $err"; exit 1; }
[[ ! -e "$store" ]] || { echo "store left behind"; exit 1; }
if [[ -n $(find runs -name '*.tmp-*') ]]; then echo "temporary files left behind"; exit 1; fi
echo "store readers: ok"
