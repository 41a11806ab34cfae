#!/usr/bin/env bash
# Regrid + standardize of a North-America-sized synthetic year: `downscale preprocess` against
# the equivalent CDO operator chain, timed in the same run on the same fetched NetCDF files.
#   ours:  downscale preprocess   20 predictors, 2° source -> the 53 x 30 model grid (bilinear),
#          training mean and sd (n - 1) per box, standardized; pr 0.5° -> the 209 x 117 output
#          grid, mm/day, mask and target; everything written to the HDF5 store
#   CDO:   per predictor  cdo -L div -sub -remapbil,model.grid F -timmean -remapbil,model.grid F
#                                    -timstd1 -remapbil,model.grid F  out.nc
#          for pr         cdo -L remapbil,output.grid pr.nc out.nc
# (one cdo call per field; -L and chained operators let CDO overlap its operators on both cores,
# ours is one thread). ROUNDS rounds (4), the side that runs first alternating, so neither has
# the warmer cache or the quieter minute; prints each round, the medians and the ratio of the
# medians CDO / ours (> 1: we are faster). Then the outputs are compared: every standardized
# predictor and the regridded pr of the store against CDO's, where both have a value. A
# difference past the tolerance (printed with its reason) is exit 1: a fast wrong preprocess is
# no win.
#   usage: [ROUNDS=4] [KEEP=1] bench/preprocess_vs_cdo.sh <downscale binary> [year]
# (KEEP=1 keeps the work folder, for a look at the outputs)
set -euo pipefail
bin=$(realpath "$1")
year=${2:-2000}
src=$(cd "$(dirname "$0")/.." && pwd)
command -v cdo >/dev/null || { echo "cdo not found: scripts/install-deps.sh installs it"; exit 1; }
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT
cd "$work"
cp -r "$src/configs" .
# The synthetic datasets (they read synth.dir) for fetch and preprocess alike: preprocess refuses
# a fetch folder of other datasets than its config names (exit 2).
set_year=(--set "synth.years=[$year,$year]" --set "fetch.years=[$year,$year]" --set "preprocess.train_years=[$year,$year]"
          --set "preprocess.validation_years=[]" --set "preprocess.test_years=[]" --set run.log_level=warn
          --set fetch.predictors.dataset=synth_era_interim --set fetch.predictand.dataset=synth_ewembi)
cfg=configs/north_america.yaml
echo "== preparing one synthetic year over North America (synth, fetch; not timed)"
"$bin" synth --config $cfg "${set_year[@]}"
"$bin" fetch --config $cfg "${set_year[@]}"
fetch=runs/north_america/fetch

# The target grids as CDO grid descriptions, from the same config values.
cat > model.grid <<G
gridtype = lonlat
xsize = 53
ysize = 30
xfirst = -165
xinc = 2
yfirst = 12
yinc = 2
G
cat > output.grid <<G
gridtype = lonlat
xsize = 209
ysize = 117
xfirst = -164.75
xinc = 0.5
yfirst = 11.75
yinc = 0.5
G

# Wall time and CPU time (user + sys, children included) of a command, as "wall cpu".
TIMEFORMAT='%R %U %S'
# A side that fails is not timed: its error is shown and the benchmark exits 1 (a failed
# preprocess once showed as an 86x win). Run in the script's own shell (output to a file, not in a
# process substitution), so that its exit ends the script.
measure() {
  local t
  t=$({ time "$@" >/dev/null 2>"$work/measure.err"; } 2>&1) ||
    { echo "preprocess_vs_cdo.sh: failed: $*" >&2; cat "$work/measure.err" >&2; exit 1; }
  tail -n 1 <<<"$t" | awk '{ print $1, $2 + $3 }'
}
# Warm the page cache for both sides alike.
files=$(find "$fetch/predictors" "$fetch/predictand" -name '*.nc' | sort)
cat $files >/dev/null

rounds=${ROUNDS:-4}  # even: each side runs first as often
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "preprocess_vs_cdo.sh: ROUNDS must be a positive whole number, got '$rounds'" >&2; exit 2; }
ours_preprocess() { "$bin" preprocess --config $cfg "${set_year[@]}"; }
mkdir -p cdo_out
cdo_chain() {
  for f in $files; do
    name=$(basename "$f" .nc)
    if [[ $f == */predictand/* ]]; then
      cdo -s -L remapbil,output.grid "$f" "cdo_out/$name.nc"
    else
      cdo -s -L div -sub -remapbil,model.grid "$f" -timmean -remapbil,model.grid "$f" \
        -timstd1 -remapbil,model.grid "$f" "cdo_out/$name.nc"
    fi
  done 2>/dev/null  # CDO's HDF5 library prints diagnostics while probing optional attributes
}
echo "== $rounds rounds: downscale preprocess (20 predictors and pr into the store) and the CDO chain"
printf "%-6s %-6s %10s %10s %10s %10s\n" round first "ours wall" "ours cpu" "cdo wall" "cdo cpu"
ours_w=() ours_c=() cdo_w=() cdo_c=()
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then
    measure ours_preprocess >"$work/ours.t"
    measure cdo_chain >"$work/cdo.t"
    first=ours
  else
    measure cdo_chain >"$work/cdo.t"
    measure ours_preprocess >"$work/ours.t"
    first=cdo
  fi
  read -r ow oc <"$work/ours.t"
  read -r cw cc <"$work/cdo.t"
  ours_w+=("$ow") ours_c+=("$oc") cdo_w+=("$cw") cdo_c+=("$cc")
  printf "%-6s %-6s %10.2f %10.2f %10.2f %10.2f\n" "$r" "$first" "$ow" "$oc" "$cw" "$cc"
done
median() { printf "%s\n" "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ours=$(median "${ours_w[@]}") ours_cpu=$(median "${ours_c[@]}") theirs=$(median "${cdo_w[@]}") theirs_cpu=$(median "${cdo_c[@]}")
n=$(echo "$files" | wc -w)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "fields: $n files ($(du -shc $files | tail -n 1 | cut -f1)), one year, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
printf "%-22s %8s %8s   (medians of %d rounds)\n" "" "wall s" "cpu s" "$rounds"
printf "%-22s %8.2f %8.2f\n" "downscale preprocess" "$ours" "$ours_cpu"
printf "%-22s %8.2f %8.2f\n" "cdo chain" "$theirs" "$theirs_cpu"
echo "ratio cdo / downscale: wall $(ratio "$theirs" "$ours"), cpu $(ratio "$theirs_cpu" "$ours_cpu")  (> 1: downscale is faster)"

echo "== the outputs compared (store against CDO's files, where both have a value)"
/usr/bin/python3 "$src/bench/preprocess_cdo_compare.py" runs/north_america/preprocess/store.h5 cdo_out
