#!/usr/bin/env bash
# Longitudes at the +-180 seam, on a global source stored 0..360 (as NCEP's and ERA's are), from
# local files (a dataset's url is a folder here):
#  A. a predictor grid whose cells reach the seam (lon -180..178 at 2°): its cells there are
#     regridded from the source's columns on both sides, as CDO does on its cyclic grids; before,
#     conservative left the part past the seam out (the lon 178 column off by up to 30 Pa) and
#     bilinear refused lon 178 as "not covered";
#  B. a box across the antimeridian, fetch.lon [170, 190]: fetched, preprocessed, trained,
#     predicted and evaluated with longitudes past 180, the predictand's values the source's.
# Predictors are compared with `cdo remapcon` / `cdo remapbil` within 0.05 Pa: values about 1e5 Pa
# in float32 are 1 ulp = 0.0078 Pa apart, and the sums may round in another order.
#   usage: fetch_seam.sh <downscale binary> <source dir>
set -euo pipefail
bin=$1
src=$2
py=/usr/bin/python3  # Debian's, with python3-netcdf4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

"$py" - <<'PY'
import numpy as np, netCDF4
days = np.arange(10957 - 31, 10957 + 60 + 366)  # 1999-12-01 .. 2001-02-28, two winters
rng = np.random.default_rng(0)
lon = np.arange(0, 360, 2.5); lat = np.arange(50, 29.9, -2.5)  # north to south, as NCEP's
L, A = np.meshgrid(lon, lat)
wave = np.sin(np.arange(days.size)[:, None, None] / 7 + L / 40)
def axes(d, la, lo, name, units):
    d.createDimension('time', None); d.createDimension('lat', la.size); d.createDimension('lon', lo.size)
    t = d.createVariable('time', 'f8', ('time',)); t.units = 'days since 1970-01-01'; t.calendar = 'standard'; t[:] = days
    d.createVariable('lat', 'f4', ('lat',))[:] = la; d['lat'].units = 'degrees_north'
    d.createVariable('lon', 'f4', ('lon',))[:] = lo; d['lon'].units = 'degrees_east'
    v = d.createVariable(name, 'f4', ('time', 'lat', 'lon')); v.units = units
    return v
with netCDF4.Dataset('slp.nc', 'w') as d:
    axes(d, lat, lon, 'slp', 'Pa')[:] = (100000 + 800 * np.sin(np.radians(L) * 2) + 500 * wave
                                        + rng.normal(0, 50, (days.size,) + L.shape))
plon = np.arange(-179.75, 180, 0.5); plat = np.arange(40.25, 44, 0.5)
with netCDF4.Dataset('pr.nc', 'w') as d:
    axes(d, plat, plon, 'pr', 'mm/day')[:] = rng.gamma(0.5, 4, (days.size, plat.size, plon.size))
PY
mkdir datasets
printf 'name: g\nurl: "%s"\ntime_step: day\nvariables:\n  psl: {native: slp, url: "slp.nc", units: Pa}\n' "$work" > datasets/g.yaml
printf 'name: p\nurl: "%s"\ntime_step: day\nvariables:\n  pr: {native: pr, url: "pr.nc", units: mm/day}\n' "$work" > datasets/p.yaml
config() {  # name, fetch.lon, predictor_grid lon
  cat > "$1.yaml" <<EOF2
run: {dir: runs/$1, threads: 2}
fetch:
  predictors: {dataset: datasets/g.yaml, fields: [psl]}
  predictand: {dataset: datasets/p.yaml, variable: pr}
  lon: $2
  lat: [40, 44]
  years: [2000, 2001]
  season: [12, 1, 2]
preprocess:
  predictor_grid: {lon: $3, lat: [36, 44], step: 2.0}
  regrid: {default: conservative}
  train_years: [2000, 2000]
  test_years: [2001, 2001]
model: {name: deepesd}
train: {epochs: 1, batch_size: 16}
EOF2
}
# The store's predictors (x * sd + mean, train and test days) against CDO's regridding of slp.nc.
compare() {  # store, cdo operator, grid's first lon, number of lons
  printf 'gridtype = lonlat\nxsize = %s\nysize = 5\nxfirst = %s\nxinc = 2\nyfirst = 36\nyinc = 2\n' "$4" "$3" > grid.txt
  cdo -s -f nc4 "$2,grid.txt" slp.nc cdo.nc
  "$py" - "$1" cdo.nc "$2" <<'PY'
import sys, numpy as np, netCDF4
d, ref = netCDF4.Dataset(sys.argv[1]), netCDF4.Dataset(sys.argv[2])
assert np.allclose(ref['lon'][:], d['predictor_lon'][:]), (ref['lon'][:], d['predictor_lon'][:])
assert np.allclose(ref['lat'][:], d['predictor_lat'][:])
rt = np.floor(ref['time'][:]).astype(int)
mean, sd = d['stats/mean'][:].astype(float), d['stats/sd'][:].astype(float)
worst = 0
for split in ('train', 'test'):
    x = d[split]['x'][:].astype(float)[:, 0] * sd[0] + mean[0]
    r = ref['slp'][:].astype(float)[np.searchsorted(rt, d[split]['time'][:])]
    diff = np.abs(x - r).max(axis=(0, 1))
    worst = max(worst, diff.max())
    print(f'{sys.argv[3]} {split}: largest difference {diff.max():.4f} Pa, in the column at lon '
          f'{d["predictor_lon"][int(diff.argmax())]:g}')
sys.exit(0 if worst < 0.05 else 1)
PY
}

echo "== A. a predictor grid at the seam (lon -180..178), conservative and bilinear"
config seam '[-180, 180]' '[-180, 178]'
"$bin" fetch --config seam.yaml
"$bin" preprocess --config seam.yaml 2>&1 | tee seam.log
! grep -q "stops short" seam.log || { echo "the seam was taken for a source stopping short"; exit 1; }
compare runs/seam/preprocess/store.h5 remapcon -180 180
"$bin" preprocess --config seam.yaml --set 'preprocess.regrid={default: bilinear}'  # the store replaced
compare runs/seam/preprocess/store.h5 remapbil -180 180

echo "== B. a box across the antimeridian, lon [170, 190], end to end"
config across '[170, 190]' '[170, 190]'
for stage in fetch preprocess train predict evaluate; do "$bin" $stage --config across.yaml; done
compare runs/across/preprocess/store.h5 remapcon 170 11
"$py" - <<'PY'
import numpy as np, netCDF4
src, f = netCDF4.Dataset('pr.nc'), netCDF4.Dataset('runs/across/fetch/predictand/pr.nc')
lon = f['lon'][:]
want = np.arange(170.25, 190, 0.5)
assert np.allclose(lon, want), lon
cols = [int(np.argmin(np.abs((src['lon'][:] - x + 180) % 360 - 180))) for x in lon]
days = np.searchsorted(src['time'][:], np.floor(f['time'][:]))
assert np.array_equal(src['pr'][:][days][:, :, cols], f['pr'][:]), 'the fetched predictand is not the source'
out = netCDF4.Dataset('runs/across/predict/precipitation.nc')
assert np.allclose(out['lon'][:], want), out['lon'][:]
print(f'predictand: {lon.size} columns 170.25..189.75 as the source has them; prediction on the same grid')
PY
[[ -s runs/across/evaluate/scores.json ]] || { echo "evaluate wrote no scores"; exit 1; }
echo "seam and antimeridian: ok"
