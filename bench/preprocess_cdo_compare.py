#!/usr/bin/python3
"""The store preprocess wrote against CDO's outputs of the same fetched files (preprocess_vs_cdo.sh).

Every standardized predictor of /train/x against CDO's `div -sub -remapbil -timmean -remapbil
-timstd1 -remapbil` of that field, and /train/obs against CDO's `remapbil` of pr (to mm/day), on
the days and boxes where both have a value. Prints the largest differences and exits 1 past the
tolerances:
  predictors: 2e-4 absolute, in standard deviations. Both sides use the same bilinear weights
    (tests/preprocess/test_cdo_reference.cpp: equal to 1e-7 relative); ours standardizes float32
    regridded values with double statistics, CDO works in double and writes float32, so a
    field of z at 5500 m with a daily sd near 20 m differs by its float32 rounding, 5500 * 6e-8
    / 20 = 1.6e-5 sd; 2e-4 leaves tenfold room and still sees a wrong statistic (ddof 0 against 1
    over 366 days is 1.4e-3 sd at 1 sd out).
  pr: 1e-5 relative + 1e-4 mm/day: one float32 rounding of the flux and of the product by 86400.
Values missing on one side only are counted apart. CDO's remapbil leaves a target missing when
any of its four source neighbours is, even one of weight 0: on this output grid, a subset of
the source's, every target is a source point, and at the coasts CDO drops values ours copies
exactly (preprocess/regrid.h: only neighbours of non-zero weight count). Those are printed; a
value ours leaves missing where CDO has one is an error past 0.1 % of the values.
"""
import glob
import os
import sys

import h5py
import netCDF4
import numpy as np

store_path, cdo_dir = sys.argv[1], sys.argv[2]
PRED_TOL, PR_REL, PR_ABS, MISSING_SHARE = 2e-4, 1e-5, 1e-4, 1e-3


def field_of(nc):
    """The one data variable of a CDO output: (time, lat, lon) after dropping a level axis."""
    names = [n for n, v in nc.variables.items() if v.ndim >= 3 and n not in ("time_bnds",)]
    if len(names) != 1:
        sys.exit(f"{nc.filepath()}: expected one data variable, found {names}")
    v = nc.variables[names[0]]
    v.set_auto_mask(True)
    data = np.ma.filled(v[:].astype(np.float64), np.nan)
    return names[0], v, data.reshape(data.shape[0], data.shape[-2], data.shape[-1])


def days_of(nc):
    t = nc.variables["time"]
    dates = netCDF4.num2date(t[:], t.units, getattr(t, "calendar", "standard"))
    return np.array([(np.datetime64(f"{d.year:04d}-{d.month:02d}-{d.day:02d}") - np.datetime64("1970-01-01")).astype(int)
                     for d in dates])


failed = False
with h5py.File(store_path, "r") as s:
    channels = s.attrs["channels"]
    channels = (channels.decode() if isinstance(channels, bytes) else channels).split(",")
    store_days = s["train/time"][:]
    x = s["train/x"]
    print(f"{'field':<10} {'days':>5} {'values':>9} {'max |diff|':>12} {'ours missing':>13} {'CDO missing':>12}")
    for path in sorted(glob.glob(os.path.join(cdo_dir, "*.nc"))):
        name = os.path.basename(path)[:-3]
        with netCDF4.Dataset(path) as nc:
            var, v, theirs = field_of(nc)
            days = days_of(nc)
        # The same days on both sides: a time slip that dropped some would otherwise pass on the rest.
        if len(days) != len(store_days) or not np.array_equal(np.sort(days), store_days):
            print(f"{name}: CDO wrote {len(days)} days, the store holds {len(store_days)}; "
                  f"{int(np.isin(days, store_days).sum())} in common")
            failed = True
            continue
        keep = np.isin(days, store_days)
        rows = np.searchsorted(store_days, days[keep])
        theirs = theirs[keep]
        if name in channels:
            ours = x[:, channels.index(name)][rows].astype(np.float64)
            tol = lambda o, t: np.full(o.shape, PRED_TOL)
        else:  # the predictand, on the store's observation window
            r0, c0, nr, nc_ = (int(k) for k in (s.attrs["obs_window"].decode() if isinstance(s.attrs["obs_window"], bytes)
                                                else s.attrs["obs_window"]).split(","))
            ours = s["train/obs"][rows, r0:r0 + nr, c0:c0 + nc_].astype(np.float64)
            units = getattr(v, "units", "")
            if units in ("kg m-2 s-1", "kg/m2/s", "kg m**-2 s**-1"):
                theirs = theirs * 86400.0
            tol = lambda o, t: PR_REL * np.abs(t) + PR_ABS
        if ours.shape != theirs.shape:
            print(f"{name}: the store holds {ours.shape}, CDO wrote {theirs.shape}")
            failed = True
            continue
        both = np.isfinite(ours) & np.isfinite(theirs)
        ours_only = ~np.isfinite(ours) & np.isfinite(theirs)  # missing in ours alone
        cdo_only = np.isfinite(ours) & ~np.isfinite(theirs)
        diff = np.abs(ours - theirs)
        worst = float(diff[both].max()) if both.any() else float("nan")
        over = both & (diff > tol(ours, theirs))
        print(f"{name:<10} {int(keep.sum()):>5} {int(both.sum()):>9} {worst:>12.3g} {int(ours_only.sum()):>13} "
              f"{int(cdo_only.sum()):>12}")
        if over.any():
            d, i, j = np.argwhere(over)[0]
            print(f"  FAIL: {int(over.sum())} values past the tolerance; first on day {int(store_days[rows[d]])} "
                  f"at row {i}, column {j}: ours {ours[d, i, j]:.7g}, CDO {theirs[d, i, j]:.7g}")
            failed = True
        if ours_only.sum() > MISSING_SHARE * ours_only.size:
            print(f"  FAIL: {int(ours_only.sum())} values missing in the store where CDO has one (more than "
                  f"{MISSING_SHARE:.1%})")
            failed = True
        if not both.any():
            print("  FAIL: no value on both sides")
            failed = True
print("outputs agree within the tolerances" if not failed else "outputs DIFFER: see above")
sys.exit(1 if failed else 0)
