#!/usr/bin/env bash
# Write faults in every stage (issue 12, "every write checked and durable"). Each row injects one
# failed write, close or fsync into one output with the LD_PRELOAD shim tests/support/fail_writes.c
# (ENOSPC or EIO), or fills a small tmpfs, and expects: exit 1, one error line naming the file and
# the cause ("No space left on device" / "Input/output error"), no crash, nothing new under the
# final name (absent, or the previous file unchanged), no temporary file left; then a rerun of the
# stage without the fault succeeds. On main before this test every row ended with exit 0 and a
# corrupt or truncated file renamed into place, or with a segfault in HDF5's exit handler.
#   usage: faults_durable.sh <downscale binary> <source dir> <libfail_writes.so>
set -uo pipefail
bin=$1
src=$2
shim=$3
work=$(mktemp -d)
tfs=$work/tmpfs
cleanup() {
  mountpoint -q "$tfs" 2>/dev/null && umount "$tfs"
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 1
cp -r "$src/configs" .
failures=0
start=$(date +%s)

# A small version of the demo (two fields, three years, a tiny net, one thread: the machine is
# shared) so that each faulty run takes a second or two.
small=(--set synth.years=[2000,2002] --set fetch.years=[2000,2002] --set 'fetch.predictors.fields=[z@500,ta@850]'
       --set preprocess.train_years=[2000,2000] --set preprocess.validation_years=[2001,2001]
       --set preprocess.test_years=[2002,2002] --set 'model.filters=[4,4,4]' --set train.epochs=1
       --set run.threads=1 --set run.log_level=warn)
ds() {  # ds <stage> [more args]: the stage on the small config, run folder $run
  local stage=$1
  shift
  "$bin" "$stage" --config configs/demo.yaml "${small[@]}" --set run.dir="$run" "$@"
}

run=$work/runs/f
for stage in synth fetch preprocess train predict evaluate; do
  ds "$stage" >/dev/null 2>"$work/setup.err" || { echo "setup: downscale $stage failed"; cat "$work/setup.err"; exit 1; }
done
echo "small run folder built in $(( $(date +%s) - start )) s"

sum() { [[ -e $1 ]] && md5sum <"$1" || echo absent; }

# check <label> <stage> <output path relative to the run folder> <cause> <rc> <stderr file> <sum before>
check() {
  local label=$1 stage=$2 out=$3 cause=$4 rc=$5 err=$6 before=$7 ok=1 lines
  lines=$(grep -c 'error' "$err")
  if [[ $rc -ne 1 ]]; then echo "FAIL $label: exit $rc, expected 1"; ok=0; fi
  if [[ $lines -ne 1 ]]; then echo "FAIL $label: $lines error lines, expected 1"; ok=0; fi
  if ! grep 'error' "$err" | grep -qF "$(basename "$out")"; then echo "FAIL $label: the error does not name $(basename "$out")"; ok=0; fi
  if ! grep 'error' "$err" | grep -qF "$cause"; then echo "FAIL $label: the error does not say '$cause'"; ok=0; fi
  if [[ $(sum "$run/$out") != "$before" ]]; then echo "FAIL $label: $out changed under its final name"; ok=0; fi
  local temps
  temps=$(find "$run/" -name '*.tmp-*' 2>/dev/null)
  if [[ -n $temps ]]; then echo "FAIL $label: temporary files left: $temps"; ok=0; fi
  if [[ $ok -eq 1 ]]; then
    echo "ok $label: $(grep 'error' "$err")"
  else
    sed 's/^/    /' "$err"
    failures=$((failures + 1))
  fi
}

# fault <stage> <output (relative to the run folder)> <errno name> [shim settings...] [-- stage args]:
# the stage with that one write failing.
fault() {
  local stage=$1 out=$2 errno=$3
  shift 3
  local env=() args=()
  while [[ $# -gt 0 && $1 != -- ]]; do env+=("$1"); shift; done
  [[ ${1:-} == -- ]] && { shift; args=("$@"); }
  local cause="No space left on device"
  [[ $errno == EIO ]] && cause="Input/output error"
  local before rc
  before=$(sum "$run/$out")
  env DS_FAIL_PATH="$out" DS_FAIL_ERRNO="$errno" "${env[@]}" LD_PRELOAD="$shim" \
    "$bin" "$stage" --config configs/demo.yaml "${small[@]}" --set run.dir="$run" "${args[@]}" \
    >/dev/null 2>"$work/err"
  rc=$?
  check "$stage: $errno on $out (${env[*]:-first call})" "$stage" "$out" "$cause" $rc "$work/err" "$before"
}

# rerun <stage> [args]: without the fault the stage succeeds.
rerun() {
  if ds "$@" >/dev/null 2>"$work/err"; then
    echo "ok rerun of $1 without the fault: exit 0"
  else
    echo "FAIL rerun of $1 without the fault"; sed 's/^/    /' "$work/err"; failures=$((failures + 1))
  fi
  temps=$(find "$run/" -name '*.tmp-*')
  [[ -z $temps ]] || { echo "FAIL rerun of $1 left $temps"; failures=$((failures + 1)); }
}

# --- preprocess: the store (HDF5): a lost data write, the final close, the fsync before rename.
fault preprocess preprocess/store.h5 ENOSPC DS_FAIL_AFTER=20
fault preprocess preprocess/store.h5 EIO DS_FAIL_AFTER=20
fault preprocess preprocess/store.h5 ENOSPC DS_FAIL_AFTER=5 DS_FAIL_STICKY=1
# The close of the temporary: the first close of a store.h5 is preprocess reading the store it
# replaces (whose checkpoints it names), which is no write.
fault preprocess preprocess/store.h5 EIO DS_FAIL_ON=close DS_FAIL_PATH=preprocess/store.h5.tmp
fault preprocess preprocess/store.h5 ENOSPC DS_FAIL_ON=fsync
rerun preprocess

# --- train: both checkpoints (HDF5), metrics.csv (appended), the TensorBoard events, the report.
# A fresh run over an earlier one failing at its first checkpoint leaves the earlier run whole:
# its metrics.csv, events and best model too. (They went first: metrics.csv was cut to its header,
# the events deleted, and a --resume then continued the earlier run with its history lost.)
history() { cat "$run/train/metrics.csv" "$run"/train/tensorboard/*/events.* "$run/train/checkpoint_best.h5" | md5sum; }
history_before=$(history)
fault train train/checkpoint_last.h5 ENOSPC DS_FAIL_AFTER=3
[[ $(history) == "$history_before" ]] && echo "ok the earlier run's history and best model are whole" ||
  { echo "FAIL the failed fresh run changed the earlier run's metrics.csv, events or best model"; failures=$((failures + 1)); }
# Its best model failing (after its last checkpoint replaced the earlier run's): the earlier best
# is gone (checked as "absent" under its final name), not left beside this run's checkpoint for
# predict to take.
[[ -e $run/train/checkpoint_best.h5 ]] || { echo "FAIL no earlier best model to replace"; failures=$((failures + 1)); }
DS_FAIL_PATH=train/checkpoint_best.h5 DS_FAIL_ERRNO=EIO DS_FAIL_AFTER=5 LD_PRELOAD="$shim" \
  "$bin" train --config configs/demo.yaml "${small[@]}" --set run.dir="$run" >/dev/null 2>"$work/err"
check "train: EIO on train/checkpoint_best.h5 (DS_FAIL_AFTER=5), the earlier best removed" train train/checkpoint_best.h5 \
  "Input/output error" $? "$work/err" absent
fault train train/checkpoint_last.h5 EIO DS_FAIL_ON=fsync
fault train train/metrics.csv ENOSPC DS_FAIL_AFTER=1
fault train train/train_report.json EIO
# A fresh run whose best model fails (as above) and then --resume: the epoch's last checkpoint was
# its best model too, so it becomes checkpoint_best.h5 (before, the resume believed it written,
# "nothing to train", and predict found no best model), and metrics.csv gets the epoch's line
# back from the checkpoint.
run_id() { /usr/bin/python3 -c 'import h5py, sys; print(h5py.File(sys.argv[1], "r").attrs.get("run_id", ""))' "$1"; }
settled() {  # settled <label>: best and last of one run, metrics.csv with epoch 1 alone, predict silent
  local label=$1 ok=1
  [[ -e $run/train/checkpoint_best.h5 ]] || { echo "FAIL $label: no checkpoint_best.h5"; ok=0; }
  [[ $ok -eq 1 && $(run_id "$run/train/checkpoint_best.h5") == "$(run_id "$run/train/checkpoint_last.h5")" &&
     -n $(run_id "$run/train/checkpoint_last.h5") ]] || { echo "FAIL $label: checkpoint_best.h5 is not the last one's run"; ok=0; }
  [[ $(grep -c '^[0-9]' "$run/train/metrics.csv") -eq 1 && $(grep -c '^1,' "$run/train/metrics.csv") -eq 1 ]] ||
    { echo "FAIL $label: metrics.csv is not this run's one epoch:"; sed 's/^/    /' "$run/train/metrics.csv"; ok=0; }
  ds predict >/dev/null 2>"$work/predict.err" && ! grep -q "another training run's" "$work/predict.err" ||
    { echo "FAIL $label: predict after the resume"; sed 's/^/    /' "$work/predict.err"; ok=0; }
  [[ $ok -eq 1 ]] && echo "ok $label" || failures=$((failures + 1))
}
DS_FAIL_PATH=train/checkpoint_best.h5 DS_FAIL_ERRNO=EIO DS_FAIL_AFTER=5 LD_PRELOAD="$shim" \
  "$bin" train --config configs/demo.yaml "${small[@]}" --set run.dir="$run" >/dev/null 2>"$work/err"
[[ $? -eq 1 && ! -e $run/train/checkpoint_best.h5 ]] || { echo "FAIL the best model's fault again"; failures=$((failures + 1)); }
# Before the resume (a job requeued after a kill there, a user's predict): predict names the
# last checkpoint and the resume that settles the folder, not a fresh `downscale train`, and
# train --check prints the `settle:` line on which slurm/train_forhlr2.sh launches the ranks
# (it ended the job at once on `finished:`, leaving the folder without its best model for good).
ds predict >/dev/null 2>"$work/predict.err"
rc=$?
[[ $rc -eq 3 ]] && grep -q "checkpoint_best.h5: no such checkpoint (predict.checkpoint best), but checkpoint_last.h5 is there" "$work/predict.err" &&
  grep -q "downscale train --resume. settles the folder" "$work/predict.err" &&
  echo "ok predict without the best model names the resume that settles it" ||
  { echo "FAIL predict without the best model: exit $rc"; sed 's/^/    /' "$work/predict.err"; failures=$((failures + 1)); }
ds train --check --resume >"$work/check.out" 2>&1
rc=$?
[[ $rc -eq 0 ]] && grep -q "^finished: " "$work/check.out" &&
  grep -q "^settle: checkpoint_best.h5 is missing: copied from checkpoint_last.h5, whose epoch was the best; .*metrics.csv lacks epoch 1" "$work/check.out" &&
  echo "ok train --check: a finished run's folder to settle" ||
  { echo "FAIL train --check before the resume: exit $rc"; sed 's/^/    /' "$work/check.out"; failures=$((failures + 1)); }
if ds train --resume >/dev/null 2>"$work/err" && grep -q "checkpoint_best.h5 is missing: this run stopped after writing .* copied from it" "$work/err"; then
  settled "train --resume after the failed best model: copied from the last checkpoint"
else
  echo "FAIL train --resume after the failed best model:"; sed 's/^/    /' "$work/err"; failures=$((failures + 1))
fi
ds train --check --resume >"$work/check.out" 2>&1
# (Its report was never written: the run failed before it, and a finished run writes none.)
grep -q "^finished: .* are kept, and no train_report.json (a run writes it when its training ends" "$work/check.out" && ! grep -q "^settle:" "$work/check.out" &&
  echo "ok train --check after the resume: finished, nothing to settle" ||
  { echo "FAIL train --check after the resume"; sed 's/^/    /' "$work/check.out"; failures=$((failures + 1)); }
# A fresh run (another seed) stopping after its first checkpoint and before taking the folder
# over (its first write there, model_summary.txt, fails): the earlier run's best model and
# metrics.csv stay beside this run's last checkpoint; predict says so, and --resume makes the
# folder this run's. (It resumed with the earlier run's best model and metrics.csv before.)
DS_FAIL_PATH=train/model_summary.txt DS_FAIL_ERRNO=ENOSPC LD_PRELOAD="$shim" \
  "$bin" train --config configs/demo.yaml "${small[@]}" --set run.dir="$run" --set train.seed=7 >/dev/null 2>"$work/err"
rc=$?
[[ $rc -eq 1 ]] && grep -q "model_summary.txt" "$work/err" || { echo "FAIL model_summary.txt fault: exit $rc"; failures=$((failures + 1)); }
ds predict >/dev/null 2>"$work/predict.err"
grep -q "checkpoint_best.h5 is another training run's than .*checkpoint_last.h5" "$work/predict.err" &&
  echo "ok predict warns that the best model is another run's" ||
  { echo "FAIL predict beside another run's best model:"; sed 's/^/    /' "$work/predict.err"; failures=$((failures + 1)); }
if ds train --resume --set train.seed=7 >/dev/null 2>"$work/err" && grep -q "checkpoint_best.h5 is another run's (run id" "$work/err"; then
  settled "train --resume beside another run's best model and metrics.csv: made this run's"
else
  echo "FAIL train --resume beside another run's best model:"; sed 's/^/    /' "$work/err"; failures=$((failures + 1))
fi
rerun train

# --- predict: the predictions (netCDF-4 through HDF5) and its scores.
fault predict predict/precipitation.nc ENOSPC DS_FAIL_AFTER=3
fault predict predict/precipitation.nc EIO DS_FAIL_AFTER=10
fault predict predict/scores.json ENOSPC
# ... and says which of the folder's files are this run's.
grep -q "predict is this run's; its scores.json is an earlier run's" "$work/err" ||
  { echo "FAIL predict: the scores.json error does not say the prediction is this run's"; failures=$((failures + 1)); }
rerun predict

# --- evaluate: scores (JSON, CSV) and a map (PNG).
fault evaluate evaluate/scores.json ENOSPC
fault evaluate evaluate/scores.csv EIO
grep -q "while writing scores.csv into .*evaluate: scores.nc, scores.json are this run's; the rest is an earlier run's" "$work/err" ||
  { echo "FAIL evaluate: the scores.csv error does not say which files are this run's"; failures=$((failures + 1)); }
fault evaluate evaluate/bias.png ENOSPC
grep -q "while writing the figures into .*evaluate: scores.nc, scores.json, scores.csv are this run's; the figures drawn before this one are this run's, the others an earlier run's, if any" "$work/err" ||
  { echo "FAIL evaluate: the figure's error does not say which files are this run's"; failures=$((failures + 1)); }
rerun evaluate

# --- fetch: one chunk (netCDF-4) and a joined field, in a fresh run folder (a complete one skips
# its chunks). Its worker processes each fail their own write.
run=$work/runs/g
fault fetch fetch/chunks/z@500/2001.nc ENOSPC DS_FAIL_AFTER=2
fault fetch fetch/predictors/ta@850.nc EIO DS_FAIL_AFTER=5
fault fetch fetch/manifest.json ENOSPC
rerun fetch

# --- a full disk for real: a small tmpfs (needs mount; skipped with a message where not allowed).
if mkdir -p "$tfs" && mount -t tmpfs -o size=2M tmpfs "$tfs" 2>/dev/null; then
  run=$tfs/run
  mkdir -p "$run"
  ln -s "$work/runs/f/fetch" "$run/fetch"
  # The store (12 MB) does not fit: refused before its passes, from its size and the free space;
  # compressed (it might fit), written until the disk is full in the middle of its HDF5 writes.
  ds preprocess >/dev/null 2>"$work/err"
  check "preprocess on a full tmpfs, refused before writing" preprocess preprocess/store.h5 \
    "the store needs about 12.3 MB" $? "$work/err" absent
  grep -q "MB free: free space, write it elsewhere" "$work/err" || { echo "FAIL the refusal does not say the free space"; failures=$((failures + 1)); }
  ds preprocess --set preprocess.compression=1 >/dev/null 2>"$work/err"
  check "preprocess on a full tmpfs, compressed" preprocess preprocess/store.h5 "No space left on device" $? "$work/err" absent
  # The checkpoints (46 kB) on a disk with 24 kB left: the first, checkpoint_last.h5, fails (a
  # fresh run's history comes after it, so nothing else is written); then space again and a rerun.
  rm -rf "$run/preprocess"
  ln -s "$work/runs/f/preprocess" "$run/preprocess"
  fill=$((2048 - 24))
  dd if=/dev/zero of="$tfs/filler" bs=1k count=$fill status=none 2>/dev/null
  ds train >/dev/null 2>"$work/err"
  check "train on a full tmpfs" train train/checkpoint_last.h5 "No space left on device" $? "$work/err" absent
  [[ -z $(ls -A "$run/train" | grep -v '^\.') ]] || { echo "FAIL train on a full tmpfs left $(ls "$run/train")"; failures=$((failures + 1)); }
  rm -f "$tfs/filler"
  rerun train
  # The predictions (6 MB) do not fit.
  rm -rf "$run/train" "$run"/.downscale-* 2>/dev/null
  ln -s "$work/runs/f/train" "$run/train"
  ds predict >/dev/null 2>"$work/err"
  check "predict on a full tmpfs" predict predict/precipitation.nc "No space left on device" $? "$work/err" absent
  # fetch's chunks (netCDF-4 through HDF5, which does not always record the errno of a full
  # disk: it said "HDF error" alone) in a fresh run folder on the emptied tmpfs.
  rm -rf "${tfs:?}"/*
  run=$tfs/g
  ds fetch >/dev/null 2>"$work/err"
  rc=$?
  if [[ $rc -eq 1 ]] && grep -q "cannot write: No space left on device" "$work/err" && [[ -z $(find "$tfs" -name '*.tmp-*') ]]; then
    echo "ok fetch on a full tmpfs: $(cat "$work/err")"
  else
    echo "FAIL fetch on a full tmpfs: exit $rc"; sed 's/^/    /' "$work/err"; failures=$((failures + 1))
  fi
else
  echo "skipped the full-tmpfs rows: mount -t tmpfs is not permitted here"
fi

echo "faults_durable took $(( $(date +%s) - start )) s, $failures failure(s)"
[[ $failures -eq 0 ]]
