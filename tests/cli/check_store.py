"""Reads a downscale training store with h5py, as a trainer written in Python would, and checks
its layout and numbers. Run with Debian's /usr/bin/python3 (python3-h5py, python3-numpy).
usage: check_store.py STORE [DEFLATE_LEVEL]"""
import sys

import h5py
import numpy as np

path = sys.argv[1]
deflate = int(sys.argv[2]) if len(sys.argv) > 2 else 0
f = h5py.File(path, "r")
a = f.attrs
def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)
assert text(a["format"]) == "downscale-store-3", a["format"]
channels = text(a["channels"]).split(",")
C = len(channels)
for key in ("config", "sources", "software_version", "standardize", "regrid", "fill"):
    assert text(a[key]), key
assert "preprocess" in text(a["config"])
assert text(a["software_version"]).startswith("downscale ")
H, W = len(f["grid/predictor_lat"]), len(f["grid/predictor_lon"])
Hy, Wy = len(f["grid/predictand_lat"]), len(f["grid/predictand_lon"])
assert (Hy, Wy) == (4 * H - 3, 4 * W - 3), (H, W, Hy, Wy)
# Format 2: the predictand, its units and calendar, and the observation window in the output grid.
assert text(a["predictand"]) == "pr" and text(a["predictand_units"]) == "mm/day", (a["predictand"], a["predictand_units"])
assert text(a["calendar"]) == "standard", a["calendar"]
r0, c0, nr, nc = (int(v) for v in text(a["obs_window"]).split(","))
assert 0 <= r0 and r0 + nr <= Hy and 0 <= c0 and c0 + nc <= Wy, a["obs_window"]
assert np.array_equal(f["grid/obs_lat"][:], f["grid/predictand_lat"][r0:r0 + nr])
assert np.array_equal(f["grid/obs_lon"][:], f["grid/predictand_lon"][c0:c0 + nc])
assert np.all(np.diff(f["grid/predictor_lat"][:]) > 0) and np.all(np.diff(f["grid/predictand_lon"][:]) > 0)
mask = f["mask"][:]
assert mask.shape == (Hy, Wy) and mask.dtype == np.uint8 and 0 < mask.sum() < mask.size
assert f["stats/mean"].shape == (C, H, W) and f["stats/sd"].shape == (C, H, W)
assert np.all(f["stats/sd"][:] > 0)
days = 0
for split in ("train", "validation", "test"):
    g = f[split]
    n = g["time"].shape[0]
    days += n
    x, y, pr = g["x"], g["y"], g["obs"]
    assert x.shape == (n, C, H, W) and x.dtype == np.float32, x.shape
    assert y.shape == (n, Hy, Wy) and pr.shape == (n, Hy, Wy)
    # Sample-major chunks: a batch is a contiguous read.
    assert x.chunks[1:] == (C, H, W) and x.chunks[0] <= 8, x.chunks
    assert (x.compression == "gzip") == (deflate > 0), (x.compression, deflate)
    assert (y.compression == "gzip") == (deflate > 0)
    t = g["time"][:]
    assert np.all(np.diff(t) > 0)
    assert pr.attrs["units"] in (b"mm/day", "mm/day"), pr.attrs["units"]
    assert text(g["time"].attrs["calendar"]) == "standard"
    yv, prv = y[:], pr[:]
    # y is NaN wherever not observed (ocean here: the synthetic land has no gaps), the wet-day
    # amount (>= 0) elsewhere, and agrees with obs.
    assert np.all(np.isnan(yv[:, mask == 0])) and np.all(yv[:, mask == 1] >= 0)
    assert np.all(np.isnan(prv[:, mask == 0])) and np.all(np.isfinite(prv[:, mask == 1]))
    assert np.array_equal(np.isnan(yv), np.isnan(prv))
    thr = float(a["wet_threshold"])
    land = mask == 1
    assert np.allclose(yv[:, land], np.where(prv[:, land] >= thr, prv[:, land] - thr, 0), atol=1e-5)
    assert np.all(np.isfinite(x[:]))
# Training predictors are standardized with their own statistics: mean 0, sample sd (ddof 1) 1.
xt = f["train/x"][:].astype(np.float64)
assert np.abs(xt.mean(axis=0)).max() < 1e-3, np.abs(xt.mean(axis=0)).max()
assert np.abs(xt.std(axis=0, ddof=1) - 1).max() < 1e-3, np.abs(xt.std(axis=0, ddof=1) - 1).max()
print(f"h5py: {path}: {C} channels {H}x{W} -> {Hy}x{Wy}, {days} days, x chunks {f['train/x'].chunks}, "
      f"compression {f['train/x'].compression}, regrid {text(a['regrid'])[:60]}...")
