#!/usr/bin/env bash
# `downscale fetch` against the test OPeNDAP server (tests/dap_server): an interrupted fetch
# resumes and ends identical to an uninterrupted one; dropped connections and 500s are retried;
# a 404 variable and a 401 fail at once with exit 3; credentials come from ~/.netrc through
# ~/.dodsrc and never show; a damaged chunk is fetched again, a damaged ledger said and every chunk
# fetched again; --dry-run fetches and writes nothing; no
# temporary file or manifest is left after any failure.
#   usage: fetch_dap.sh <downscale binary> <source dir>
set -uo pipefail
bin=$1
src=$2
work=$(mktemp -d)
server_pid=
trap '[[ -n $server_pid ]] && kill $server_pid; rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures+1)); }
cd "$work"

mkdir srv
/usr/bin/python3 "$src/tests/dap_server/make_sources.py" srv || { echo "make_sources failed"; exit 1; }
source "$src/tests/cli/dap_server.sh"
start_dap_server srv
header=$(ncdump -h "$base/udg_like.nc" 2>/dev/null)  # netCDF-C itself talks to the server
grep -qF 'short Z500(time, lat, lon)' <<<"$header" || fail "ncdump cannot read the test server: $header"

mkdir datasets
cat > datasets/udg.yaml <<'EOF'
name: UDG-like test source
url: udg_like.nc
time_step: day
variables:
  z:  {native: "Z{level}", units: m2 s-2}
  ta: {native: "T{level}", units: K}
EOF
cat > datasets/pr.yaml <<EOF
name: EWEMBI-like test source
url: $base/pr_like.nc
time_step: day
variables:
  pr: {native: pr, units: kg m-2 s-1, scale: 86400, std_units: mm/day, max_missing: 0.6}
EOF
cat > run.yaml <<EOF
run: {dir: runs/a}
fetch:
  predictors: {dataset: udg, source: $base/udg_like.nc, fields: [z@500, ta@850]}
  predictand: {dataset: pr, variable: pr}
  lon: [-110, -90]
  lat: [30, 40]
  years: [2000, 2001]
  season: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
  parallel: 2
  attempts: 4
  retry_delay: 0.05
EOF

# values <run dir>: the data of every fetched file (headers hold the source URL, which differs)
values() {
  for f in "$1"/fetch/predictors/z@500.nc "$1"/fetch/predictors/ta@850.nc "$1"/fetch/predictand/pr.nc; do
    ncdump "$f" | sed -n '/^data:/,$p'
  done
}
no_leftovers() {  # <run dir> <what>
  if [[ -n $(find "$1" -name '*.tmp-*') ]]; then fail "$2: temporary files left: $(find "$1" -name '*.tmp-*')"; fi
  [[ -e $1/fetch/manifest.json ]] && fail "$2: a manifest was left behind"
  return 0
}

# 1. Dry run: lists the 6 chunks and their sizes, fetches nothing.
out=$("$bin" fetch --config run.yaml --dry-run 2>&1) || fail "dry run: $out"
grep -q '6 chunks, 6 to fetch' <<<"$out" || fail "dry run does not list 6 chunks to fetch: $out"
[[ -e runs/a/fetch/chunks ]] && fail "dry run fetched something"
# Nor takes the lock or clears temporaries: it writes nothing (a read-only folder could not be looked at).
[[ -e runs/a/fetch ]] && fail "dry run wrote into the run folder: $(ls -A runs/a/fetch)"

# 2. The reference: an uninterrupted fetch. Workers keep the source open across their chunks:
#    udg_like.nc is opened (one DAS request each time) once to plan and at most once per worker
#    (parallel: 2), not once per chunk (4).
logged=$(wc -l < server.log)
"$bin" fetch --config run.yaml > a.log 2>&1 || { fail "clean fetch"; cat a.log; }
opens=$(tail -n +$((logged + 1)) server.log | grep -c 'GET /udg_like.nc.das ')
(( opens >= 1 && opens <= 3 )) || fail "udg_like.nc opened $opens times for 4 chunks with 2 workers (expected 1 + at most 2)"
values runs/a > a.values
[[ -s a.values ]] || fail "no values read from runs/a (the comparisons below would compare nothing)"
grep -q '"units": "mm/day"' runs/a/fetch/manifest.json || fail "manifest lacks the predictand's units"
out=$("$bin" fetch --config run.yaml --dry-run 2>&1)
grep -q '6 chunks, 0 to fetch' <<<"$out" || fail "dry run after the fetch: $out"

# 3. Interrupted (SIGTERM while chunks are in flight on a slow server), then resumed.
slow="--set fetch.predictors.source=$base/faults/slow=0.7/udg_like.nc --set run.dir=runs/b --set fetch.parallel=1"
"$bin" fetch --config run.yaml $slow > b1.log 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q 'chunks/' runs/b/fetch/chunks/ledger.json 2>/dev/null && break; sleep 0.1; done
kill -TERM $pid
wait $pid
rc=$?
[[ $rc -ne 0 ]] || fail "the interrupted fetch exited 0"
grep -q 'interrupted' b1.log || fail "the interrupted fetch does not say so: $(tail -2 b1.log)"
no_leftovers runs/b "interrupted fetch"
"$bin" fetch --config run.yaml $slow > b2.log 2>&1 || { fail "resumed fetch"; cat b2.log; }
grep -Eq '6 chunks \([1-5] complete from an earlier run\)' b2.log || fail "the resumed fetch did not reuse chunks: $(grep chunks b2.log | head -1)"
values runs/b | cmp -s - a.values || fail "resumed fetch differs from the uninterrupted one"

# 4. Dropped connections and 500s: retried with backoff, same result.
"$bin" fetch --config run.yaml --set run.dir=runs/c \
  --set fetch.predictors.source="$base/faults/drop=2+e500=1+id=c/udg_like.nc" > c.log 2>&1 || { fail "fetch with retries"; cat c.log; }
grep -q 'retrying in' c.log || fail "no retry was logged"
values runs/c | cmp -s - a.values || fail "fetch with retries differs from the clean one"

# 5. Too many failures: gives up after fetch.attempts, exit 1, nothing left.
"$bin" fetch --config run.yaml --set run.dir=runs/d --set fetch.attempts=2 \
  --set fetch.predictors.source="$base/faults/e500=99+id=d/udg_like.nc" > d.log 2>&1
rc=$?
[[ $rc -eq 1 ]] || fail "giving up: exit $rc, expected 1"
grep -q 'gave up after 2 attempts' d.log || fail "giving up is not reported: $(tail -1 d.log)"
no_leftovers runs/d "giving up"

# 6. A variable the server cannot serve (404): exit 3 at once, naming URL and variable.
start=$(date +%s%N)
"$bin" fetch --config run.yaml --set run.dir=runs/e --set fetch.retry_delay=3 \
  --set fetch.predictors.source="$base/faults/gone=Z500/udg_like.nc" > e.log 2>&1
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[[ $rc -eq 3 ]] || fail "404 variable: exit $rc, expected 3"
grep -q "error: $base/faults/gone=Z500/udg_like.nc: variable 'Z500'.*404" e.log || fail "404 message: $(tail -1 e.log)"
(( ms < 3000 )) || fail "404 was retried (took $ms ms)"
no_leftovers runs/e "404"
[[ -e runs/e/fetch/predictors ]] && fail "404: joined files left"

# 7. A server that wants a login: 401 without credentials (exit 3), success with ~/.netrc named
#    by HTTP.NETRC in ~/.dodsrc; the password appears nowhere.
auth="--set fetch.predictors.source=$base/faults/auth=1/udg_like.nc"
mkdir home
HOME=$work/home "$bin" fetch --config run.yaml --set run.dir=runs/f $auth > f1.log 2>&1
rc=$?
[[ $rc -eq 3 ]] || fail "401: exit $rc, expected 3"
grep -q '401' f1.log || fail "401 message: $(tail -1 f1.log)"
printf 'machine 127.0.0.1\nlogin tester\npassword s3cret-pw\n' > home/.netrc
chmod 600 home/.netrc
printf 'HTTP.NETRC=%s/home/.netrc\n' "$work" > home/.dodsrc
(cd home && HOME=$work/home "$bin" fetch --config ../run.yaml --set run.dir=../runs/f $auth) > f2.log 2>&1 || { fail "fetch with .netrc"; cat f2.log; }
values runs/f | cmp -s - a.values || fail "fetch with credentials differs"
# Credentials in the URL itself: used, and redacted everywhere.
"$bin" fetch --config run.yaml --set run.dir=runs/g \
  --set fetch.predictors.source="http://tester:s3cret-pw@127.0.0.1:$port/faults/auth=1/udg_like.nc" > g1.log 2>&1 || { fail "fetch with credentials in the URL"; cat g1.log; }
"$bin" fetch --config run.yaml --set run.dir=runs/h \
  --set fetch.predictors.source="http://tester:s3cret-pw@127.0.0.1:$port/nothing_here.nc" > g2.log 2>&1
[[ $? -eq 3 ]] || fail "404 dataset with credentials: expected exit 3"
grep -q "127.0.0.1:$port/nothing_here.nc" g2.log || fail "404 message lacks the URL: $(tail -1 g2.log)"
if grep -rq 's3cret-pw' *.log runs; then fail "the password shows in: $(grep -rl 's3cret-pw' *.log runs)"; fi

# 8. A damaged chunk (one byte changed) is noticed by its checksum and fetched again.
chunk=runs/a/fetch/chunks/ta@850/2001.nc
printf '\x01' | dd of=$chunk bs=1 seek=5000 conv=notrunc status=none
"$bin" fetch --config run.yaml > a2.log 2>&1 || { fail "refetch"; cat a2.log; }
grep -q '6 chunks (5 complete from an earlier run), 1 to fetch' a2.log || fail "damaged chunk not refetched: $(grep chunks a2.log | head -1)"
values runs/a | cmp -s - a.values || fail "refetched result differs"

# 9. A damaged ledger (cut short): every chunk is fetched again, and fetch says why (it did so
#    without a word, a refetch of hours over a real server).
head -c 200 runs/a/fetch/chunks/ledger.json > ledger.cut && mv ledger.cut runs/a/fetch/chunks/ledger.json
"$bin" fetch --config run.yaml > a3.log 2>&1 || { fail "fetch after a damaged ledger"; cat a3.log; }
grep -q "chunks/ledger.json: the chunk ledger cannot be read (.*): without it no chunk on disk can be checked, so every chunk is fetched again" a3.log ||
  fail "a damaged ledger is not said: $(grep -m1 chunks a3.log)"
grep -q '6 chunks (0 complete from an earlier run), 6 to fetch' a3.log || fail "after a damaged ledger: $(grep -m1 'chunks (' a3.log)"
values runs/a | cmp -s - a.values || fail "fetched after a damaged ledger, the result differs"

echo "fetch over DAP: $failures failures"
[[ $failures -eq 0 ]]
