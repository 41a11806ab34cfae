#!/usr/bin/env bash
# Fetch throughput against nccopy (netcdf-bin), the netCDF-C tool a user would otherwise run, on
# the same subset of the same OPeNDAP server in the same run: tests/dap_server serving a global
# daily 1.5-degree float field of YEARS years, cut to the reference experiment's North America
# box. Two conditions, each measured for both tools:
#   local: the server on 127.0.0.1 at full speed (Python's GIL: one request at a time);
#   wan:   each connection paced to RATE bytes/s, as a remote THREDDS server over the internet,
#          where several chunks in flight are what makes fetch faster.
#   usage: bench/fetch_vs_nccopy.sh <downscale binary> [years=10] [parallel=4] [rate=4000000]
# Prints the times, throughputs, the ratio (fetch throughput / nccopy throughput; >= 1: fetch at
# least as fast) and fetch's peak memory (largest resident set among its processes).
set -euo pipefail
bin=$(realpath "$1")
years=${2:-10}
parallel=${3:-4}
rate=${4:-4000000}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
server_pid=
trap '[[ -n $server_pid ]] && kill $server_pid; [[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
cd "$work"
mkdir srv

# The source (global, 0..360, descending latitudes like ERA-Interim) and a coarse local
# predictand over the box, so that fetch moves the same bytes as nccopy plus a few.
read -r x0 x1 y0 y1 nt < <(/usr/bin/python3 - "$years" <<'EOF'
import sys, numpy as np, netCDF4
years = int(sys.argv[1])
t0 = int((np.datetime64("1981-01-01") - np.datetime64("1970-01-01")).astype(int))
nt = int((np.datetime64("%d-01-01" % (1981 + years)) - np.datetime64("1981-01-01")).astype(int))
def axes(ds, lat, lon):
    for n, v in (("time", nt), ("lat", len(lat)), ("lon", len(lon))): ds.createDimension(n, v)
    t = ds.createVariable("time", "f8", ("time",)); t.units = "days since 1970-01-01"; t.calendar = "standard"
    t[:] = np.arange(t0, t0 + nt)
    ds.createVariable("lat", "f8", ("lat",))[:] = lat
    ds.createVariable("lon", "f8", ("lon",))[:] = lon
lat = np.arange(90, -90.1, -1.5); lon = np.arange(0, 360, 1.5)
rng = np.random.default_rng(1)
with netCDF4.Dataset("srv/global.nc", "w") as ds:
    axes(ds, lat, lon)
    v = ds.createVariable("T850", "f4", ("time", "lat", "lon"), chunksizes=(1, len(lat), len(lon))); v.units = "K"
    for i in range(0, nt, 365):
        n = min(365, nt - i)
        v[i:i + n] = (250 + rng.standard_normal((n, len(lat), len(lon)))).astype("f4")
with netCDF4.Dataset("pr.nc", "w") as ds:
    axes(ds, np.arange(10.5, 71, 10.0), np.arange(-166, -59, 10.0))
    p = ds.createVariable("pr", "f4", ("time", "lat", "lon")); p.units = "kg m-2 s-1"
    p[:] = np.full((nt, 7, 11), 1e-5, "f4")
x = np.where((lon >= 194) & (lon <= 300))[0]; y = np.where((lat >= 10.5) & (lat <= 70.5))[0]
print(x[0], x[-1], y[0], y[-1], nt)
EOF
)
/usr/bin/python3 "$src/tests/dap_server/dap_server.py" --root srv > port.txt 2> server.err &
server_pid=$!
for _ in $(seq 50); do grep -q PORT port.txt 2>/dev/null && break; sleep 0.1; done
base=http://127.0.0.1:$(awk '{print $2}' port.txt)
bytes=$(( nt * (y1 - y0 + 1) * (x1 - x0 + 1) * 4 ))
printf 'subset: %d days x %d x %d floats = %.1f MB; fetch: %d chunks of one year, %d at a time\n' "$nt" \
  $((y1 - y0 + 1)) $((x1 - x0 + 1)) "$(echo "$bytes / 1000000" | bc -l)" "$years" "$parallel"

now() { date +%s.%N; }
measure() {  # <label> <url>
  local label=$1 url=$2 t t_nccopy t_fetch rss_kb
  rm -rf run nccopy.nc
  t=$(now)
  nccopy "$url?time,lat[$y0:$y1],lon[$x0:$x1],T850[0:$((nt - 1))][$y0:$y1][$x0:$x1]" nccopy.nc 2>/dev/null
  t_nccopy=$(echo "$(now) - $t" | bc)
  cat > run.yaml <<EOF
run: {dir: run, log_level: warn}
fetch:
  predictors: {source: $url, fields: [T@850]}
  predictand: {source: $work/pr.nc, variable: pr}
  lon: [-166, -60]
  lat: [10.5, 70.5]
  years: [1981, $((1980 + years))]
  parallel: $parallel
EOF
  mkdir -p datasets
  t=$(now)
  /usr/bin/time -v "$bin" fetch --config run.yaml --set fetch.predictors.dataset=datasets/bench.yaml 2> time.txt ||
    { cat time.txt; exit 1; }
  t_fetch=$(echo "$(now) - $t" | bc)
  rss_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' time.txt)
  printf '%-6s nccopy %6.2f s (%5.1f MB/s) | fetch %6.2f s (%5.1f MB/s), peak RSS %d MB | ratio %.2f\n' "$label" \
    "$t_nccopy" "$(echo "$bytes / $t_nccopy / 1000000" | bc -l)" "$t_fetch" "$(echo "$bytes / $t_fetch / 1000000" | bc -l)" \
    $((rss_kb / 1024)) "$(echo "$t_nccopy / $t_fetch" | bc -l)"
}
mkdir -p datasets
cat > datasets/bench.yaml <<EOF
name: bench (one variable per level, as UDG's ERA-Interim)
url: unused
time_step: day
variables:
  T: {native: "T{level}", units: K}
EOF
measure local "$base/global.nc"
measure wan "$base/faults/rate=$rate/global.nc"
