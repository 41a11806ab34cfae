#!/usr/bin/env bash
# `downscale fetch` of the real Iberia files (tests/data/iberia: NCEP reanalysis 1, E-OBS,
# CNRM-CM5) over the test OPeNDAP server, read as they are: one file per variable, surface
# fields (psl, tas) beside levels stated by an attribute (hus@850, ta@850), units as the
# archives spell them converted through udunits2 (Pascals -> Pa, Celsius -> K for NCEP tas,
# E-OBS tg kept in degC), the dataset's folder replaced by `source`; then the CMIP5 historical
# predictors alone (no predictand), and a level that contradicts the file's attribute.
#   usage: fetch_iberia.sh <downscale binary> <source dir>
set -uo pipefail
bin=$1
src=$2
work=$(mktemp -d)
server_pid=
trap '[[ -n $server_pid ]] && kill $server_pid; rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures+1)); }
cd "$work"

# The server reads the committed files in place (it never writes to its root).
source "$src/tests/cli/dap_server.sh"
start_dap_server "$src/tests/data/iberia"
base=$base/

cat > ncep.yaml <<EOF2
run: {dir: runs/ncep}
fetch:
  predictors: {dataset: iberia_ncep, source: "$base", fields: [hus@850, psl, ta@850, tas]}
  predictand: {dataset: iberia_eobs, source: "$base", variable: tas}
  lon: [-10, 5]
  lat: [35, 45]
  years: [1983, 2002]
  season: [12, 1, 2]
  parallel: 2
  retry_delay: 0.1
EOF2
"$bin" fetch --config ncep.yaml > ncep.log 2>&1 || { fail "fetch of NCEP + E-OBS"; cat ncep.log; }
# Each file is opened once to plan, then at most once per worker (parallel: 2).
for f in NCEP_Iberia_hus850 NCEP_Iberia_psl NCEP_Iberia_ta850 NCEP_Iberia_tas EOBS_Iberia_tas; do
  n=$(grep -c "GET /$f.nc.das " server.log)
  (( n >= 1 && n <= 3 )) || fail "$f.nc opened $n times (expected 1 to plan + at most 2 workers)"
done

# The predictor tas and the predictand tas keep apart: a rerun finds all 100 chunks intact.
"$bin" fetch --config ncep.yaml > ncep2.log 2>&1 || { fail "second fetch of NCEP + E-OBS"; cat ncep2.log; }
grep -q '100 chunks (100 complete from an earlier run), 0 to fetch' ncep2.log || fail "rerun: $(grep chunks ncep2.log | head -1)"

# Values against the files themselves (netCDF4 reads them directly, not through fetch's code).
cat > check.py <<'EOF2'
import json, sys
import numpy as np
import netCDF4
root, run, kind, src = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
problems = []
def check(fetched, var, source, native, units, convert):
    with netCDF4.Dataset(f"{run}/fetch/{fetched}") as out, netCDF4.Dataset(f"{root}/{source}") as src:
        t = out["time"]
        if t.calendar != "standard": problems.append(f"{fetched}: calendar {t.calendar}")
        if t.units != "days since 1970-01-01 00:00:00": problems.append(f"{fetched}: time units {t.units}")
        if out[var].units != units: problems.append(f"{fetched}: units {out[var].units}, expected {units}")
        lon, lat = src["lon"][:], src["lat"][:]
        xi = np.where((lon >= -10) & (lon <= 5))[0]
        yi = np.where((lat >= 35) & (lat <= 45))[0]
        if not np.array_equal(out["lon"][:], lon[xi]): problems.append(f"{fetched}: longitudes")
        if not np.array_equal(out["lat"][:], lat[yi]): problems.append(f"{fetched}: latitudes")
        sdays = netCDF4.date2num(netCDF4.num2date(src["time"][:], src["time"].units, src["time"].calendar),
                                 "days since 1970-01-01", "standard")
        if len(t) != 1805 or not np.array_equal(np.floor(t[:]), np.floor(sdays)):
            problems.append(f"{fetched}: {len(t)} days, or other days than the source's")
        want = convert(src[native][:, yi.min():yi.max() + 1, xi.min():xi.max() + 1].astype(np.float64))
        got = out[var][:]
        if not np.array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want)):
            problems.append(f"{fetched}: missing values differ")
        diff = np.abs(got.astype(np.float64) - want).max()
        tol = 1e-5 * max(1.0, float(np.abs(want).max()))
        if not diff <= tol: problems.append(f"{fetched}: values differ by {diff} (> {tol})")
    print(f"{fetched}: checked")
same = lambda x: x
manifest = json.load(open(f"{run}/fetch/manifest.json"))
if kind == "ncep":
    check("predictors/hus@850.nc", "hus", "NCEP_Iberia_hus850.nc", "hus", "kg kg-1", same)
    check("predictors/psl.nc", "psl", "NCEP_Iberia_psl.nc", "psl", "Pa", same)
    check("predictors/ta@850.nc", "ta", "NCEP_Iberia_ta850.nc", "ta", "K", same)
    check("predictors/tas.nc", "tas", "NCEP_Iberia_tas.nc", "tas", "K", lambda c: c + 273.15)
    check("predictand/tas.nc", "tas", "EOBS_Iberia_tas.nc", "tg", "degC", same)
    if manifest["predictand"]["name"] != "tas" or manifest["predictand"]["units"] != "degC":
        problems.append(f"manifest predictand: {manifest['predictand']}")
else:
    check("predictors/hus@850.nc", "hus", "CMIP5_Iberia_hus850.nc", "hus", "kg kg-1", same)
    check("predictors/psl.nc", "psl", "CMIP5_Iberia_psl.nc", "psl", "Pa", same)
    check("predictors/ta@850.nc", "ta", "CMIP5_Iberia_ta850.nc", "ta", "K", same)
    check("predictors/tas.nc", "tas", "CMIP5_Iberia_tas.nc", "tas", "K", same)
    if manifest["predictand"] is not None: problems.append(f"manifest predictand: {manifest['predictand']}")
names = [p["name"] for p in manifest["predictors"]]
if names != ["hus@850", "psl", "ta@850", "tas"]: problems.append(f"manifest predictors: {names}")
want_request = {"lon": [-10, 5], "lat": [35, 45], "years": [1983, 2002],
                "datasets": {"predictors": "iberia_ncep", "predictand": "iberia_eobs"} if kind == "ncep" else
                            {"predictors": "iberia_cnrm_cm5_historical", "predictand": ""}}
# The definition files the names resolved to, absolute: preprocess takes a path to the same file
# as the same dataset.
import os
definition = lambda name: os.path.realpath(f"{src}/configs/datasets/{name}.yaml") if name else ""
want_request["definitions"] = {k: definition(v) for k, v in want_request["datasets"].items()}
if manifest.get("request") != want_request: problems.append(f"manifest request: {manifest.get('request')}")
for p in manifest["predictors"]:
    if p.get("calendar") != "standard": problems.append(f"manifest {p['name']}: calendar {p.get('calendar')}")
for p in problems: print("PROBLEM:", p)
sys.exit(1 if problems else 0)
EOF2
/usr/bin/python3 check.py "$src/tests/data/iberia" runs/ncep ncep "$src" || fail "NCEP + E-OBS values"

# The CMIP5 historical predictors alone (a GCM run to predict from): no predictand.
cat > cmip.yaml <<EOF2
run: {dir: runs/cmip}
fetch:
  predictors: {dataset: iberia_cnrm_cm5_historical, source: "$base", fields: [hus@850, psl, ta@850, tas]}
  lon: [-10, 5]
  lat: [35, 45]
  years: [1983, 2002]
  season: [12, 1, 2]
  parallel: 2
EOF2
"$bin" fetch --config cmip.yaml > cmip.log 2>&1 || { fail "fetch of the CMIP5 predictors alone"; cat cmip.log; }
[[ -e runs/cmip/fetch/predictand ]] && [[ -n $(ls runs/cmip/fetch/predictand) ]] && fail "a predictand was written"
/usr/bin/python3 check.py "$src/tests/data/iberia" runs/cmip cmip "$src" || fail "CMIP5 values"

# A level the file contradicts (its attribute says 850): exit 3, naming both levels.
mkdir -p datasets
cat > datasets/fixed.yaml <<'EOF2'
name: one file whatever the level
url: ""
variables:
  hus: {native: hus, url: NCEP_Iberia_hus850.nc, units: kg kg-1}
EOF2
"$bin" fetch --config ncep.yaml --set run.dir=runs/bad --set fetch.predictors.dataset=fixed \
  --set 'fetch.predictors.fields=[hus@500]' > bad.log 2>&1
rc=$?
[[ $rc -eq 3 ]] || fail "level mismatch: exit $rc, expected 3"
grep -q "NCEP_Iberia_hus850.nc: variable 'hus': holds level 850 hPa (attribute 'level') but level 500 hPa was requested" bad.log ||
  fail "level mismatch message: $(tail -1 bad.log)"

# GCM calendars end to end: a noleap and a 360_day source (generated), fetched for DJF 2001 and
# 2004 (season-year 2004 holds February 2004, a leap month on the standard calendar).
cat > gcm.py <<'EOF2'
import sys, numpy as np, netCDF4
for cal, ndays in (("noleap", 365 * 5), ("360_day", 360 * 5)):
    with netCDF4.Dataset(f"gcm_{cal}.nc", "w") as d:
        d.createDimension("time", None); d.createDimension("lat", 3); d.createDimension("lon", 4)
        t = d.createVariable("time", "f8", ("time",)); t.units = "days since 2000-01-01 12:00:00"; t.calendar = cal
        d.createVariable("lat", "f8", ("lat",))[:] = [36, 38, 40]
        d.createVariable("lon", "f8", ("lon",))[:] = [-6, -4, -2, 0]
        v = d.createVariable("tas", "f4", ("time", "lat", "lon")); v.units = "K"
        t[:] = np.arange(ndays)
        v[:] = 250 + np.arange(ndays)[:, None, None] / 100 + np.zeros((1, 3, 4))
EOF2
/usr/bin/python3 gcm.py || fail "generating the GCM sources"
cat > datasets/gcm.yaml <<'EOF2'
name: a GCM on its own calendar
url: .
variables:
  tas: {native: tas, url: "gcm_{cal}.nc", units: K}
EOF2
for cal in noleap 360_day; do
  sed "s/{cal}/$cal/" datasets/gcm.yaml > datasets/gcm_$cal.yaml
  "$bin" fetch --config cmip.yaml --set run.dir=runs/$cal --set fetch.predictors.dataset=gcm_$cal --set "fetch.predictors.source=$work" \
    --set 'fetch.predictors.fields=[tas]' --set 'fetch.years=[2001, 2004]' > $cal.log 2>&1 || { fail "fetch $cal"; cat $cal.log; }
  /usr/bin/python3 - "$cal" <<'EOF2' || fail "$cal: fetched time axis"
import sys, json, numpy as np, netCDF4
cal = sys.argv[1]
d = netCDF4.Dataset(f"runs/{cal}/fetch/predictors/tas.nc")
t = d["time"]
assert t.calendar == cal, t.calendar
dates = netCDF4.num2date(t[:], t.units, t.calendar)
feb = [x.day for x in dates if x.year == 2004 and x.month == 2]
assert feb[-1] == (28 if cal == "noleap" else 30), feb[-1]       # no 29 Feb / a 30 Feb
assert len(t) == 4 * 90, len(t)
src = netCDF4.Dataset(f"gcm_{cal}.nc")
sd = netCDF4.date2num(netCDF4.num2date(src["time"][:], src["time"].units, cal), "days since 1970-01-01", cal)
days = np.floor(t[:])  # daily values are stamped at 12:00 of their day
idx = np.searchsorted(np.floor(sd), days)
assert np.array_equal(np.floor(sd)[idx], days)
assert np.allclose(d["tas"][:, 0, 0], src["tas"][idx, 0, 0])
m = json.load(open(f"runs/{cal}/fetch/manifest.json"))
assert m["predictors"][0]["calendar"] == cal, m["predictors"][0]
print(cal, "ok")
EOF2
done

# The box the shipped config asks for: the NCEP grids reach every side (no warning); E-OBS ends
# inside it, said as an info line about the observation grid.
grep -q "warning" ncep.log && fail "fetch of the config's box warned: $(grep warning ncep.log)"
grep -qF "tas (predictand): the source's grid ends inside the requested box on the east (to 4.25), north (to 44.25)" ncep.log ||
  fail "no info line on E-OBS ending inside the box: $(cat ncep.log)"
# A box far wider than the files: fetched (exit 0) with a warning naming the fields and the sides
# they stop short of, instead of silently less than asked.
out=$("$bin" fetch --config ncep.yaml --set run.dir=runs/wide --set 'fetch.lon=[-30,5]' --set 'fetch.lat=[20,60]' 2>&1) ||
  fail "fetch of a wide box: $out"
grep -qF "hus@850, psl, ta@850: the source's grid ends inside the requested box (fetch.lon [-30, 5], fetch.lat [20, 60]) on the west (from -10), south (from 35), north (to 45)" <<<"$out" ||
  fail "no warning on a box wider than the source: $out"

# A season the winter files do not hold is named as such, not as a gap in the time axis.
rc=0; out=$("$bin" fetch --config ncep.yaml --set run.dir=runs/jja --set 'fetch.season=[6,7,8]' 2>&1) || rc=$?
[[ $rc -eq 3 ]] && grep -qF "no data for 1983-06-01 (season year 1983): the file holds no day of month 6 (its months: 1, 2, 12), which fetch.season lists" <<<"$out" ||
  fail "a season the files lack: exit $rc, $out"
[[ -e runs/jja ]] && fail "a refused fetch left runs/jja behind"

echo "fetch of the Iberia files: $failures failures"
[[ $failures -eq 0 ]]
