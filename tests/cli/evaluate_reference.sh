#!/usr/bin/env bash
# `downscale evaluate` against an independent reference (tests/cli/evaluate_reference.py: numpy on
# fetch/predictand/pr.nc and predict/precipitation.nc, the VALUE definitions): every per-box field
# of scores.nc, every domain mean and median of scores.json and scores.csv, for the CNN's three
# outputs (two stochastic members) and the climatology baseline; linear_pcs's aggregation; the
# same for the seasons DJF and JJA (evaluate.seasons), whose maps are drawn too. Some observed
# days are missing (marked below after fetch), so spells meet gaps as well as 1 January.
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
  # Figures of MAM as an earlier evaluate with MAM would have left them: this one removes them.
  if [[ $stage == evaluate ]]; then
    mkdir -p runs/demo/evaluate
    for f in scores_table_MAM bias_MAM summary_MAM; do echo stale > runs/demo/evaluate/$f.png; done
  fi
  "$bin" "$stage" --config configs/demo.yaml "${extra[@]}" > "$stage.log" 2>&1 ||
    { cat "$stage.log"; echo "downscale $stage failed"; exit 1; }
  if [[ $stage == fetch ]]; then
    # Observation days missing in the test years, on this run's copy of pr.nc (before preprocess
    # reads it): whole days as _FillValue, single boxes as NaN (fetched files hold both), so that
    # the spells meet gaps end to end. The rule (evaluate/indices.h, R.VALUE): a missing day ends a
    # spell, and so does 1 January. Chosen from the data, not by hand:
    #   - the middle day of the longest dry spell of 2003 at any land box, at that box only;
    #   - the middle day of the longest wet spell of 2004 at any land box, the whole day;
    #   - 31 December 2003 (the year boundary, and inside DJF), the whole day;
    #   - 1 January 2004 at the box of that wet spell;
    #   - twelve random (day, box) pairs of the test years (a fixed seed).
    /usr/bin/python3 - runs/demo/fetch/predictand/pr.nc <<'PY'
import sys
import netCDF4
import numpy as np
d = netCDF4.Dataset(sys.argv[1], "r+")
v = d.variables["pr"]
v.set_auto_mask(False)
fill = np.float32(v._FillValue)
x = v[:].astype(np.float32)
t = d.variables["time"]
dates = netCDF4.num2date(t[:], t.units, t.calendar)
year = np.array([a.year for a in dates])
ymd = [(a.year, a.month, a.day) for a in dates]
nt, ny, nx = x.shape
x[x == fill] = np.nan
land = np.isfinite(x[np.isin(year, [2003, 2004])]).all(axis=0)  # boxes observed on every test day
def longest_run(cond):
    """(length, box, first day) of the longest run of cond (time, lat, lon) over the land boxes."""
    best = (0, None, None)
    for j, i in zip(*np.nonzero(land)):
        c = np.concatenate([[0], cond[:, j, i].astype(np.int8), [0]])
        e = np.flatnonzero(np.diff(c))
        if e.size:
            k = np.argmax(e[1::2] - e[0::2])
            if e[2 * k + 1] - e[2 * k] > best[0]:
                best = (e[2 * k + 1] - e[2 * k], (j, i), e[2 * k])
    return best
marks = []
y03, y04 = np.flatnonzero(year == 2003), np.flatnonzero(year == 2004)
n, box, first = longest_run(x[y03] < 1.0)
day = y03[first + n // 2]
marks.append((day, box, np.nan, f"dry spell of {n} days at box {box} in 2003"))
n, wbox, first = longest_run(x[y04] >= 1.0)
marks.append((y04[first + n // 2], None, fill, f"wet spell of {n} days at box {wbox} in 2004"))
marks.append((ymd.index((2003, 12, 31)), None, fill, "31 December 2003"))
marks.append((ymd.index((2004, 1, 1)), wbox, np.nan, "1 January 2004"))
rng = np.random.default_rng(20031231)
lj, li = np.nonzero(land)
for k in rng.choice(lj.size, 12, replace=False):
    marks.append((rng.choice(np.concatenate([y03, y04])), (lj[k], li[k]), np.nan, "random"))
raw = v[:]
for day, b, value, why in marks:
    if b is None:
        raw[day] = value
    else:
        raw[day, b[0], b[1]] = value
    print(f"missing: {'%04d-%02d-%02d' % ymd[day]} {'whole day' if b is None else 'box %s' % (b,)} ({why})")
v[:] = raw
d.close()
PY
  fi
done
# The demo's training years (configs/demo.yaml: preprocess.train_years) for the climatology.
/usr/bin/python3 "$src/tests/cli/evaluate_reference.py" runs/demo 2000 2002 DJF,JJA
# Each season's score table beside the annual one, and its maps and summary (PNGs of the annual
# maps' size, not blank; none for a season not asked).
for season in DJF JJA; do
  [[ -s runs/demo/evaluate/scores_table_$season.png ]] || { echo "no scores_table_$season.png"; exit 1; }
done
[[ ! -e runs/demo/evaluate/scores_table_MAM.png ]] || { echo "scores_table_MAM.png of a season not asked left in place"; exit 1; }
grep -q "removed 3 figures of seasons an earlier evaluate listed" evaluate.log || { cat evaluate.log; echo "no line on the removed MAM figures"; exit 1; }
/usr/bin/python3 "$src/tests/cli/season_maps_check.py" runs/demo/evaluate DJF,JJA
# The seasonal fields are CF too (climatological time axes, CF 7.4).
/usr/bin/python3 "$src/tests/cli/cf_check.py" runs/demo/evaluate/scores.nc
