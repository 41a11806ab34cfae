#!/usr/bin/env bash
# Fetch throughput against nccopy (netcdf-bin), the netCDF-C tool a user would otherwise run, on
# the same subset of the same OPeNDAP server in the same run: tests/dap_server serving a global
# daily 1.5-degree float field of YEARS years, cut to the reference experiment's North America
# box. The server serves requests concurrently (a thread each, as THREDDS does; its netCDF reads
# take turns behind one lock) and both tools talk to the same server process. Two conditions:
#   local: the server on 127.0.0.1 at full speed;
#   wan:   each connection paced to RATE bytes/s, as a remote THREDDS server over the internet.
# nccopy sends one request for the whole subset; fetch cuts it into one chunk per year, PARALLEL
# in flight. Each condition runs RUNS rounds, nccopy and fetch alternating which goes first; the
# summary shows the median of each and the ratio nccopy time / fetch time (>= 1: fetch at least
# as fast), plus fetch's peak memory (largest resident set among its processes). Every round
# checks that both tools fetched the same days, coordinates and values; a difference fails it.
#   usage: bench/fetch_vs_nccopy.sh <downscale binary> [years=10] [parallel=4] [rate=4000000] [runs=3]
set -euo pipefail
bin=$(realpath "$1")
years=${2:-10}
parallel=${3:-4}
rate=${4:-4000000}
runs=${5:-3}
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
printf 'subset: %d days x %d x %d floats = %.1f MB; fetch: %d chunks of one year, %d at a time; nccopy: one request\n' "$nt" \
  $((y1 - y0 + 1)) $((x1 - x0 + 1)) "$(echo "$bytes / 1000000" | bc -l)" "$years" "$parallel"

now() { date +%s.%N; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
run_nccopy() {  # <url>: prints seconds
  local t
  rm -f nccopy.nc
  t=$(now)
  nccopy "$1?time,lat[$y0:$y1],lon[$x0:$x1],T850[0:$((nt - 1))][$y0:$y1][$x0:$x1]" nccopy.nc 2>/dev/null
  echo "$(now) - $t" | bc
}
run_fetch() {  # <url>: prints seconds and peak RSS (kB)
  local t
  rm -rf run
  cat > run.yaml <<EOF
run: {dir: run, log_level: warn}
fetch:
  predictors: {source: $1, fields: [T@850]}
  predictand: {source: $work/pr.nc, variable: pr}
  lon: [-166, -60]
  lat: [10.5, 70.5]
  years: [1981, $((1980 + years))]
  parallel: $parallel
EOF
  t=$(now)
  /usr/bin/time -v "$bin" fetch --config run.yaml --set fetch.predictors.dataset=datasets/bench.yaml 2> time.txt ||
    { cat time.txt >&2; exit 1; }
  echo "$(echo "$(now) - $t" | bc) $(awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}' time.txt)"
}
# Both tools must have fetched the same subset, or the times compare nothing: the same days, the
# same coordinates and the same values bit for bit (fetch converts nothing here: the source is in
# the definition's K). Orders may differ (fetch writes latitudes ascending), so both are sorted
# by their coordinates first.
same_output() {  # <label> <round>
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import json, sys, numpy as np, netCDF4
label, rnd = sys.argv[1], sys.argv[2]
m = json.load(open("run/fetch/manifest.json"))
p = m["predictors"][0]
def load(path, var):
    with netCDF4.Dataset(path) as ds:
        t = ds["time"]
        # The day each value is of: fetch stamps a daily mean at noon (CF: inside its bounds), the
        # source at midnight.
        days = np.floor(netCDF4.date2num(netCDF4.num2date(t[:], t.units, getattr(t, "calendar", "standard")),
                                         "days since 1970-01-01", "standard"))
        lat, lon = np.asarray(ds["lat"][:]), np.asarray(ds["lon"][:]) % 360
        v = np.ma.filled(ds[var][:], np.nan)
    iy, ix = np.argsort(lat), np.argsort(lon)
    return np.asarray(days), lat[iy], lon[ix], v[:, iy][:, :, ix]
a = load("nccopy.nc", "T850")
b = load("run/fetch/" + p["file"], p["variable"])
what = ("days", "latitudes", "longitudes", "values")
for name, x, y in zip(what, a, b):
    if x.shape != y.shape or not np.array_equal(x, y, equal_nan=True):
        diff = "shapes %s and %s" % (x.shape, y.shape) if x.shape != y.shape else \
               "largest difference %g" % np.nanmax(np.abs(x - y))
        sys.exit("fetch_vs_nccopy.sh: %s round %s: fetch and nccopy fetched other %s (%s)" % (label, rnd, name, diff))
EOF
}
summary=()
measure() {  # <label> <url>
  local label=$1 url=$2 r tn tf rss=0 out
  local -a n=() f=()
  for r in $(seq "$runs"); do
    if (( r % 2 )); then tn=$(run_nccopy "$url"); out=$(run_fetch "$url")
    else out=$(run_fetch "$url"); tn=$(run_nccopy "$url"); fi
    tf=${out% *}
    (( ${out#* } > rss )) && rss=${out#* }
    n+=("$tn"); f+=("$tf")
    same_output "$label" "$r"
    printf '  %-5s round %d: nccopy %6.2f s | fetch %6.2f s\n' "$label" "$r" "$tn" "$tf"
  done
  tn=$(median "${n[@]}"); tf=$(median "${f[@]}")
  summary+=("$(printf '%-6s nccopy %6.2f s (%5.1f MB/s) | fetch %6.2f s (%5.1f MB/s), peak RSS %3d MB | ratio %.2f' "$label" \
    "$tn" "$(echo "$bytes / $tn / 1000000" | bc -l)" "$tf" "$(echo "$bytes / $tf / 1000000" | bc -l)" \
    $((rss / 1024)) "$(echo "$tn / $tf" | bc -l)")")
}
mkdir -p datasets
cat > datasets/bench.yaml <<EOF
name: bench (one variable per level, as UDG's ERA-Interim)
url: unused
time_step: day
variables:
  T: {native: "T{level}", units: K}
EOF
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (a busy machine slows both tools)"
measure local "$base/global.nc"
measure wan "$base/faults/rate=$rate/global.nc"
echo "medians of $runs rounds (server: threaded, concurrent requests; fetch: $years one-year chunks, $parallel in flight;"
echo "wan: $rate B/s per connection):"
printf '%s\n' "${summary[@]}"
echo "ratio = nccopy time / fetch time (>= 1: fetch at least as fast)"
