#!/usr/bin/env bash
# Where `downscale fetch` reads its sources from, and what it says when it cannot: the config's
# synth.dir for the synthetic datasets (and "run `downscale synth` first" before it exists), the
# shipped Iberia definitions from any working folder ({definition_dir}), a relative url missing
# (the error names the working folder it was read from), a server that cannot be reached (a dry
# run tries once; every failed open names the host, the no-network case and where credentials
# go; a dry run waits at most 20 s for a server that accepts and never answers, and says so),
# a dataset name found nowhere (each folder searched named once), and one file given as the source
# of a dataset that keeps one file per variable (the folder to give instead).
# A few seconds.
#   usage: fetch_errors.sh <downscale binary> <source dir>
set -uo pipefail
bin=$1
src=$2
work=$(mktemp -d)
silent_pid=
trap '[[ -n $silent_pid ]] && kill $silent_pid 2>/dev/null; rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures+1)); }
ok() { echo "ok: $*"; }
cd "$work"
cp "$src/configs/demo.yaml" demo.yaml
one=(--config demo.yaml --set run.dir=runs/x --set fetch.years=[2000,2000] --set synth.years=[2000,2000])

# synth.dir elsewhere: fetch reads it there, not data/synth (made stale-looking, and empty).
mkdir -p data/synth
out=$("$bin" fetch --dry-run "${one[@]}" --set synth.dir=alt 2>&1); rc=$?
[[ $rc -eq 3 && $out == *'alt/era_interim_synth.nc: no such file (run `downscale synth` first'* ]] &&
  ok "synthetic sources missing: run synth first" || fail "fetch before synth: exit $rc: $out"
"$bin" synth -q "${one[@]}" --set synth.dir=alt || fail "synth into alt"
out=$("$bin" fetch --dry-run "${one[@]}" --set synth.dir=alt 2>&1); rc=$?
[[ $rc -eq 0 && $out == *"ta@500: alt/era_interim_synth.nc variable 'ta'"* && $out == *"pr: alt/ewembi_synth.nc variable 'pr'"* ]] &&
  ok "synth.dir read by fetch" || fail "fetch with synth.dir=alt: exit $rc: $out"

# The shipped Iberia definitions, run from a folder other than the source tree's root.
out=$("$bin" fetch --dry-run --config "$src/configs/iberia_tas.yaml" --set run.dir=runs/iberia --set fetch.years=[1983,1983] 2>&1); rc=$?
[[ $rc -eq 0 && $out == *"psl: $src/tests/data/iberia/NCEP_Iberia_psl.nc variable 'psl'"* ]] &&
  ok "iberia definitions from another folder" || fail "iberia dry run from $work: exit $rc: $out"
# One of its files given as the source of a dataset that keeps one file per variable: a usage
# error naming the folder to give instead, not "Not a directory" for NCEP_Iberia_psl.nc/NCEP_...
out=$("$bin" fetch --dry-run --config "$src/configs/iberia_tas.yaml" --set run.dir=runs/iberia --set fetch.years=[1983,1983] \
  --set fetch.predictors.source="$src/tests/data/iberia/NCEP_Iberia_psl.nc" 2>&1); rc=$?
[[ $rc -eq 2 && $out == *"fetch.predictors.source '$src/tests/data/iberia/NCEP_Iberia_psl.nc' is a file, but dataset"* &&
   $out == *"psl: NCEP_Iberia_psl.nc"* && $out == *"set fetch.predictors.source to the folder that holds them ($src/tests/data/iberia)"* ]] &&
  ok "a file for a per-variable dataset: the folder to give" || fail "one file as a per-variable source: exit $rc: $out"

# A relative url that is not there: the error names the working folder it was read from.
mkdir -p cfg/datasets
cp demo.yaml cfg/demo.yaml
printf 'name: relative\nurl: nowhere/x.nc\nvariables:\n  z: {native: z}\n' > cfg/datasets/relative.yaml
out=$("$bin" fetch --dry-run --config cfg/demo.yaml --set fetch.predictors.dataset=relative 2>&1); rc=$?
[[ $rc -eq 3 && $out == *"nowhere/x.nc: no such file (a relative path, read from the working folder $work) (nowhere/x.nc is from cfg/datasets/relative.yaml: url 'nowhere/x.nc')"* ]] &&
  ok "relative url: names the working folder and the definition" || fail "relative url: exit $rc: $out"
# The same from the config's source: named by its key (a URL's value may hold credentials).
out=$("$bin" fetch --dry-run --config cfg/demo.yaml --set fetch.predictors.dataset=relative --set fetch.predictors.source=elsewhere/y.nc 2>&1); rc=$?
[[ $rc -eq 3 && $out == *"elsewhere/y.nc: no such file (a relative path, read from the working folder $work) (elsewhere/y.nc is from fetch.predictors.source)"* ]] &&
  ok "a source that is not there: names fetch.predictors.source" || fail "source not there: exit $rc: $out"

# A server that cannot be reached (a closed local port): the dry run tries once, whatever
# fetch.attempts says (8 tries from 5 s would wait over 10 minutes), and names the host.
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port/x.nc
hint="(host 127.0.0.1:$port unreachable? This node may have no network: compute nodes often have none, run fetch on a login node. Credentials go in ~/.netrc, named by HTTP.NETRC in ~/.dodsrc)"
unreachable=(--config demo.yaml --set run.dir=runs/net --set fetch.predictors.dataset= --set fetch.predictors.source=$url
             --set fetch.predictand=null --set fetch.attempts=8 --set fetch.retry_delay=5)
start=$SECONDS
out=$(timeout 60 "$bin" fetch --dry-run "${unreachable[@]}" 2>&1); rc=$?
[[ $rc -eq 1 && $((SECONDS - start)) -le 10 && $out == *"$url: NetCDF: I/O failure $hint (a dry run tries once)"* &&
   $(grep -c error <<<"$out") -eq 1 ]] &&
  ok "unreachable server, dry run: one try, $((SECONDS - start)) s" || fail "unreachable dry run: exit $rc after $((SECONDS - start)) s: $out"
out=$("$bin" fetch "${unreachable[@]}" --set fetch.attempts=2 --set fetch.retry_delay=0.1 2>&1); rc=$?
[[ $rc -eq 1 && $out == *"$hint (gave up after 2 attempts)"* && $out == *"$hint; attempt 1 of 2 failed"* ]] &&
  ok "unreachable server: the hint on every try" || fail "unreachable fetch: exit $rc: $out"

# A server that takes the connection and never answers: the dry run waits at most
# min(fetch.timeout_s, 20 s) (here 1 s) and says the host accepted the connection but did not
# answer, exit 1 (a network failure). (Dropped packets, a node without a route out, get the host
# hint instead: the probe after the time-out finds no connection; test_fetch ServerProbe.)
/usr/bin/python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8); print(s.getsockname()[1], flush=True); time.sleep(60)' > silent.port &
silent_pid=$!
for _ in $(seq 50); do [[ -s silent.port ]] && break; sleep 0.1; done
silent=$(cat silent.port)
start=$SECONDS
out=$(timeout 60 "$bin" fetch --dry-run "${unreachable[@]}" --set fetch.predictors.source=http://127.0.0.1:$silent/x.nc --set fetch.timeout_s=1 2>&1); rc=$?
kill "$silent_pid" 2>/dev/null; silent_pid=
[[ $rc -eq 1 && $((SECONDS - start)) -le 10 && $(grep -c error <<<"$out") -eq 1 &&
   $out == *"error: timed out after 1 s waiting for http://127.0.0.1:$silent/x.nc (fetch.timeout_s; a dry run waits at most 20 s); nothing was written (host 127.0.0.1:$silent accepted the connection but did not answer"* ]] &&
  ok "silent server, dry run: accepted but no answer, $((SECONDS - start)) s" || fail "silent server: exit $rc after $((SECONDS - start)) s: $out"

# A dataset found nowhere: each folder searched is named once (a config in configs/ makes the
# folder beside it and configs/datasets under the working folder the same one).
out=$(cd "$src" && "$bin" fetch --dry-run --config configs/demo.yaml --set fetch.predictors.dataset=nope 2>&1); rc=$?
[[ $rc -eq 2 && $out == *"--set fetch.predictors.dataset=nope: no dataset definition 'nope' (looked for nope.yaml in configs/datasets)"* ]] &&
  ok "no dataset definition: folders once" || fail "no dataset definition: exit $rc: $out"

# Fields the config no longer asks for: their files stay (the user's to delete), named at every
# fetch, and the manifest lists what the config asks for alone.
"$bin" fetch -q "${one[@]}" --set synth.dir=alt --set run.dir=runs/fewer || fail "fetch of every field"
for run in 1 2; do
  out=$("$bin" fetch "${one[@]}" --set synth.dir=alt --set run.dir=runs/fewer --set 'fetch.predictors.fields=[ta@850,z@500]' 2>&1); rc=$?
  [[ $rc -eq 0 && $out == *"predictors/hus@1000.nc, predictors/hus@500.nc, predictors/hus@700.nc, predictors/hus@850.nc and 14 more in runs/fewer/fetch: from an earlier fetch, of fields the config no longer asks for"* ]] &&
    ok "left-over fields named (fetch $run)" || fail "left-over fields, fetch $run: exit $rc: $out"
done
[[ $(/usr/bin/python3 -c 'import json; print(len(json.load(open("runs/fewer/fetch/manifest.json"))["predictors"]))') == 2 ]] ||
  fail "the manifest lists other than the 2 fields asked for"
out=$("$bin" fetch "${one[@]}" --set synth.dir=alt --set run.dir=runs/fewer 2>&1); rc=$?
[[ $rc -eq 0 && $out != *"from an earlier fetch"* ]] || fail "every field asked again: exit $rc: $out"

# A source rewritten in place (another synth.seed: a corrected dataset downloaded again under its
# old name): the rerun fetches its chunks again and says so, and the fetched values are the new
# source's, as a fetch into a new folder gives them; a rerun after it reuses every chunk. Before,
# the rerun kept every chunk of the old source (0 to fetch) and exited 0.
ta=(--set synth.dir=alt --set 'fetch.predictors.fields=[ta@850]')
"$bin" fetch -q "${one[@]}" "${ta[@]}" || fail "fetch of ta@850"
"$bin" synth -q "${one[@]}" --set synth.dir=alt --set synth.seed=7 || fail "synth with another seed"
out=$("$bin" fetch "${one[@]}" "${ta[@]}" 2>&1); rc=$?
[[ $rc -eq 0 && $out == *"ta@850: 1 chunk is fetched again: the source changed since it was fetched"* &&
   $out == *"pr: 1 chunk is fetched again"* && $out == *"2 chunks (0 complete from an earlier run), 2 to fetch"* &&
   $out != *"same bytes"* ]] &&
  ok "a changed source is fetched again" || fail "rerun after the source changed: exit $rc: $out"
"$bin" fetch -q "${one[@]}" "${ta[@]}" --set run.dir=runs/fresh || fail "fetch into a new folder"
/usr/bin/python3 - <<'PY' || fail "the refetched ta@850 is not the new source's"
import netCDF4, numpy as np
a = netCDF4.Dataset("runs/x/fetch/predictors/ta@850.nc")["ta"][:]
b = netCDF4.Dataset("runs/fresh/fetch/predictors/ta@850.nc")["ta"][:]
assert np.array_equal(np.ma.filled(a, np.nan), np.ma.filled(b, np.nan), equal_nan=True)
PY
out=$("$bin" fetch "${one[@]}" "${ta[@]}" 2>&1); rc=$?
[[ $rc -eq 0 && $out == *"2 chunks (2 complete from an earlier run), 0 to fetch"* && $out != *"fetched again"* ]] &&
  ok "an unchanged source: every chunk reused" || fail "rerun of an unchanged source: exit $rc: $out"
# A source copied without -p (a new modification time, the same values): fetched again, and said
# to hold the same bytes, so that the warning is not read as new data.
cp alt/era_interim_synth.nc copy.nc && cp copy.nc alt/era_interim_synth.nc && touch -d '+1 minute' alt/era_interim_synth.nc
out=$("$bin" fetch "${one[@]}" "${ta[@]}" 2>&1); rc=$?
[[ $rc -eq 0 && $out == *"ta@850: 1 chunk is fetched again"* &&
   $out == *"1 of the 1 chunk fetched again for a changed source holds the same bytes as before: the sources changed (a file copied or touched"* ]] &&
  ok "a touched source: fetched again, the same bytes said" || fail "rerun after a touched source: exit $rc: $out"
# synth again with the same settings (a demo rerun) writes the same bytes: the files are kept as
# they were, their modification time too, and fetch still reuses every chunk.
out=$("$bin" synth "${one[@]}" --set synth.dir=alt --set synth.seed=7 2>&1); rc=$?
[[ $rc -eq 0 && $out == *"are unchanged (the same settings), kept as they were"* ]] || fail "synth rerun: exit $rc: $out"
out=$("$bin" fetch "${one[@]}" "${ta[@]}" 2>&1); rc=$?
[[ $rc -eq 0 && $out == *"2 chunks (2 complete from an earlier run), 0 to fetch"* ]] &&
  ok "synth rerun alike: every chunk reused" || fail "fetch after a synth rerun alike: exit $rc: $out"

echo "fetch errors: $failures failures"
[[ $failures -eq 0 ]]
