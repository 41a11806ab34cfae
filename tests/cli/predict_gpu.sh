#!/usr/bin/env bash
# GPU predict against CPU predict on the demo: one checkpoint (trained on the CPU), predicted with
# run.device cpu and cuda, the NetCDF products compared. Exit 77 (skipped) without a GPU, unless
# DOWNSCALE_REQUIRE_GPU=1 (scripts/gpu_check.sh), where a missing GPU is a failure.
#
# Tolerances, relative to each field's largest magnitude over the land points:
#   train.precision fp32: p_wet, gamma_shape, gamma_scale, pr_expected within 1e-4 (cuDNN and oneDNN sum
#     the convolutions in different orders: float rounding, ~1e-6 per layer, amplified by exp);
#   train.precision tf32 (the default): within 1e-2 (TF32 keeps 10 mantissa bits: ~1e-3 per product).
#   pr (wet where p_wet reaches a per-box threshold): days whose p_wet lies within the tolerance of
#   the threshold may flip, so at most 0.1 % (fp32) / 1 % (tf32) of the land values may differ by
#   more than the tolerance. The ocean (NaN) must be the same on both.
#   usage: predict_gpu.sh <downscale binary> <source dir>
set -euo pipefail
bin=$1
src=$2
source "$(dirname "${BASH_SOURCE[0]}")/require_gpu.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp -r "$src/configs" .
for stage in synth fetch preprocess train; do
  "$bin" "$stage" --config configs/demo.yaml --set run.device=cpu
done
"$bin" predict --config configs/demo.yaml --set run.device=cpu
cp runs/demo/predict/precipitation.nc cpu.nc
for math in fp32 tf32; do
  "$bin" predict --config configs/demo.yaml --set run.device=cuda --set train.precision=$math 2>&1 | tee predict_$math.log
  grep -q 'predicting on cuda' predict_$math.log || { echo "predict did not run on the GPU"; exit 1; }
  cp runs/demo/predict/precipitation.nc gpu_$math.nc
done

# The comparison needs numpy and netCDF4 or h5py (a NetCDF-4 file is HDF5): Debian's python3 here,
# a GPU machine's PyTorch python (numpy, h5py) there. $PY first when set.
py=
for cand in ${PY:-} /usr/bin/python3 python3; do
  if "$cand" -c 'import numpy
try:
    import netCDF4
except ImportError:
    import h5py' 2>/dev/null; then py=$cand; break; fi
done
[[ -n $py ]] || { echo "predict_gpu.sh: no python with numpy and netCDF4 or h5py to compare the files"; exit 1; }
"$py" - <<'PY'
import sys
import numpy as np
try:
    import netCDF4
    def read(path, v):
        return np.ma.filled(netCDF4.Dataset(path)[v][:].astype(np.float64), np.nan)
except ImportError:
    import h5py
    def read(path, v):
        with h5py.File(path, "r") as f:
            d = f[v]
            a = d[...].astype(np.float64)
            fill = d.attrs.get("_FillValue")
            if fill is not None:
                a[a == np.asarray(fill).ravel()[0]] = np.nan
            a = a * float(np.asarray(d.attrs.get("scale_factor", 1.0)).ravel()[0]) + \
                float(np.asarray(d.attrs.get("add_offset", 0.0)).ravel()[0])
            return a
ok = True
for math, tol, flips in (("fp32", 1e-4, 1e-3), ("tf32", 1e-2, 1e-2)):
    for v in ("p_wet", "gamma_shape", "gamma_scale", "pr_expected", "pr"):
        a = read("cpu.nc", v)
        b = read(f"gpu_{math}.nc", v)
        if not np.array_equal(np.isnan(a), np.isnan(b)):
            print(f"{math} {v}: missing values differ"); ok = False; continue
        land = ~np.isnan(a)
        scale = max(np.abs(a[land]).max(), 1e-30)
        bad = np.abs(a[land] - b[land]) > tol * scale
        share = bad.mean()
        limit = flips if v == "pr" else 0.0
        print(f"{math} {v}: max |cpu - gpu| / scale = {np.abs(a[land] - b[land]).max() / scale:.2e}, "
              f"share beyond {tol:g}: {share:.2e} (allowed {limit:g})")
        if share > limit: ok = False
sys.exit(0 if ok else 1)
PY
