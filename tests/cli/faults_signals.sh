#!/usr/bin/env bash
# Issue 12's signal and lock rows (io/stop_signal.h, io/run_lock.h), on a small demo store:
#  - preprocess, train (1 rank and mpirun -np 2), predict and evaluate, sent SIGTERM in the
#    middle of their work, stop with exit 143, one line naming the signal and no *.tmp-* left;
#  - train writes checkpoint_last.h5 mid-epoch first, and --resume ends with the same weights as
#    an uninterrupted run (under MPI too, with only rank 1 signalled: the ranks agree);
#  - SIGUSR1 to train: checkpoint written, exit 75 (the code slurm/train_forhlr2.sh requeues on);
#  - a fresh train over a finished run, stopped in its first epoch, leaves that run whole; a
#    resume with fewer epochs than its checkpoint is in trains nothing and writes nothing;
#  - a stale temporary file of a dead process (manifest.json.tmp-PID, store.h5.tmp-PID, ...) is
#    removed by the next run;
#  - a second train in the same folder exits 1 naming the lock and the first one's pid.
# A stage is signalled while it waits at a safe point (DOWNSCALE_TEST_WAIT_AT, see
# io/stop_signal.h): no sleep races the work.
#   usage: faults_signals.sh <downscale binary> <source dir>
set -uo pipefail
bin=$1
src=$2
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 $p 2>/dev/null; done; rm -rf "$work"' EXIT
cd "$work" || exit 1
cp -r "$src/configs" .
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

years=(--set "synth.years=[2000,2002]" --set "fetch.years=[2000,2002]" --set "preprocess.train_years=[2000,2000]"
       --set "preprocess.validation_years=[2001,2001]" --set "preprocess.test_years=[2002,2002]")
common=("${years[@]}" --set run.threads=1 --set train.epochs=2 --set preprocess.block_days=32)
ds() { "$bin" "$1" --config configs/demo.yaml "${common[@]}" "${@:2}"; }

# start_waiting LOG WAIT_AT CMD...: starts CMD in the background with the safe-point hook and
# waits (60 s at most) until it says it waits there; sets $pid (CMD's own: `ds STAGE ...` is
# expanded here, as a shell function would run in a subshell that the signal would kill).
start_waiting() {
  local log=$1 at=$2
  shift 2
  [[ $1 == ds ]] && set -- "$bin" "$2" --config configs/demo.yaml "${common[@]}" "${@:3}"
  DOWNSCALE_TEST_WAIT_AT=$at "$@" >"$log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 600); do
    grep -q 'waiting for a signal' "$log" && return 0
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  fail "$* never reached '$at':"; tail -3 "$log"
  return 1
}
# finish PID: its exit code in $rc (once it has ended; 60 s at most, then killed).
finish() {
  for _ in $(seq 600); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$1" 2>/dev/null
  rc=0
  wait "$1" || rc=$?
}
# expect_interrupted NAME LOG CODE SIGNAL DIR: exit code, one line naming the signal, no temp files.
expect_interrupted() {
  local name=$1 log=$2 code=$3 sig=$4 dir=$5
  [[ $rc -eq $code ]] || { fail "$name: exit $rc, expected $code"; tail -3 "$log"; return; }
  local lines
  lines=$(grep -c "^downscale [a-z]*: interrupted by $sig" "$log")
  [[ $lines -eq 1 ]] || { fail "$name: expected one line 'interrupted by $sig', got $lines"; tail -3 "$log"; return; }
  if [[ -n $(find "$dir" -name '*.tmp-*') ]]; then fail "$name: temporary files left: $(find "$dir" -name '*.tmp-*')"; return; fi
  ok "$name: exit $rc, $(grep "interrupted by $sig" "$log" | head -1)"
}
checksum() { grep -o '"weights_checksum": "[0-9a-f]*"' "$1/train_report.json" | grep -o '[0-9a-f]\{16\}'; }
step_in_epoch() {
  /usr/bin/python3 -c "import h5py,sys; print(h5py.File(sys.argv[1],'r').attrs['step_in_epoch'])" "$1" 2>/dev/null
}

# A pid that no longer runs (999999 may, where pid_max is larger): a process that has ended.
dead=$(bash -c 'echo $$')
ds synth >/dev/null 2>&1 && ds fetch >/dev/null 2>&1 || { echo "synth/fetch failed"; exit 1; }

echo "== fetch: a stale manifest.json.tmp-PID of a dead process is removed"
echo '{}' >runs/demo/fetch/manifest.json.tmp-$dead
ds fetch >fetch.log 2>&1 || { cat fetch.log; exit 1; }
[[ ! -e runs/demo/fetch/manifest.json.tmp-$dead ]] && ok "stale manifest.json.tmp-$dead removed" ||
  fail "manifest.json.tmp-$dead left by a dead process was not removed (fetch looked in its subfolders only)"

echo "== preprocess: a stale store.h5.tmp-PID of a dead process is removed"
mkdir -p runs/demo/preprocess
head -c 100000 /dev/zero >runs/demo/preprocess/store.h5.tmp-$dead
ds preprocess >pp.log 2>&1 || { cat pp.log; exit 1; }
[[ ! -e runs/demo/preprocess/store.h5.tmp-$dead ]] && ok "stale store.h5.tmp-$dead removed" ||
  fail "store.h5.tmp-$dead left by a dead process was not removed"

echo "== preprocess: SIGTERM while the store is written"
mkdir -p runs/pp && ln -s "$work/runs/demo/fetch" runs/pp/fetch
if start_waiting pp_sig.log "writing the validation split" ds preprocess --set run.dir=runs/pp; then
  ls runs/pp/preprocess/store.h5.tmp-* >/dev/null 2>&1 || fail "preprocess: no temporary store while writing (test hook misplaced?)"
  kill -TERM $pid; finish $pid
  expect_interrupted preprocess pp_sig.log 143 SIGTERM runs/pp
  [[ ! -e runs/pp/preprocess/store.h5 ]] || fail "preprocess: an interrupted run left store.h5"
fi

for run in full sig usr1 mfull msig; do
  mkdir -p runs/$run/preprocess
  ln -s "$work/runs/demo/preprocess/store.h5" runs/$run/preprocess/store.h5
done

echo "== train, 1 rank: SIGTERM mid-epoch, checkpoint, --resume to the uninterrupted weights"
ds train --set run.dir=runs/full >full.log 2>&1 || { cat full.log; exit 1; }
want=$(checksum runs/full/train)
# A fresh run over it, stopped in its first epoch as its warning invites: the earlier run stays
# whole (its metrics.csv was emptied and its checkpoint replaced by the new run's first steps).
cp runs/full/train/metrics.csv full_metrics.csv
full_last=$(sha256sum <runs/full/train/checkpoint_last.h5)
if start_waiting fresh.log "epoch 1 step 3 " ds train --set run.dir=runs/full; then
  kill -INT $pid; finish $pid
  expect_interrupted "fresh run over a finished one, SIGINT in epoch 1" fresh.log 130 SIGINT runs/full
  grep -q "exists: this run starts afresh and replaces it, with its metrics.csv, at the end of its first epoch" fresh.log &&
    grep -q "nothing written: the earlier run's runs/full/train/checkpoint_last.h5, metrics.csv and TensorBoard events are as they were" fresh.log ||
    fail "fresh run stopped in epoch 1: $(tail -2 fresh.log)"
  cmp -s full_metrics.csv runs/full/train/metrics.csv && [[ $(sha256sum <runs/full/train/checkpoint_last.h5) == "$full_last" ]] &&
    ls runs/full/train/tensorboard/train/events.out.tfevents.* >/dev/null 2>&1 && [[ $(checksum runs/full/train) == "$want" ]] &&
    ok "the earlier run's checkpoint, metrics.csv, events and report kept" || fail "the fresh run changed the earlier run's files"
fi
# The same over an earlier run whose checkpoint_last.h5 is gone (its best model and metrics.csv
# left): warned of, and stopped in its first epoch, nothing of the earlier run is replaced.
mkdir -p runs/bestonly/preprocess runs/bestonly/train
ln -s "$work/runs/demo/preprocess/store.h5" runs/bestonly/preprocess/store.h5
cp runs/full/train/checkpoint_best.h5 runs/full/train/metrics.csv runs/bestonly/train/
best_only=$(sha256sum <runs/bestonly/train/checkpoint_best.h5)
if start_waiting bestonly.log "epoch 1 step 3 " ds train --set run.dir=runs/bestonly; then
  kill -INT $pid; finish $pid
  expect_interrupted "fresh run over a best model alone, SIGINT in epoch 1" bestonly.log 130 SIGINT runs/bestonly
  grep -q "checkpoint_best.h5 exists (an earlier run's; its checkpoint_last.h5 is not there): this run replaces it" bestonly.log &&
    grep -q "nothing written: the earlier run's runs/bestonly/train/checkpoint_best.h5, metrics.csv" bestonly.log &&
    [[ $(sha256sum <runs/bestonly/train/checkpoint_best.h5) == "$best_only" ]] &&
    cmp -s runs/full/train/metrics.csv runs/bestonly/train/metrics.csv &&
    [[ ! -e runs/bestonly/train/checkpoint_last.h5 ]] &&
    ok "a best model alone: warned of, and kept by a fresh run stopped in its first epoch" ||
    fail "a fresh run over a best model alone: $(tail -3 bestonly.log)"
fi
mkdir -p runs/sig/train && head -c 1000 /dev/zero >runs/sig/train/checkpoint_last.h5.tmp-$dead
if start_waiting sig.log "epoch 2 step 5 " ds train --set run.dir=runs/sig; then
  [[ ! -e runs/sig/train/checkpoint_last.h5.tmp-$dead ]] || fail "train: stale checkpoint temp not removed"
  echo "-- a second train in the same folder"
  rc=0
  ds train --set run.dir=runs/sig >second.log 2>&1 || rc=$?
  if [[ $rc -eq 1 ]] && grep -q "another downscale train (pid $pid on host .*) is using runs/sig/train (lock runs/sig/train/.downscale-train.lock)" second.log; then
    ok "second train: exit 1, $(grep -o 'error: .*' second.log)"
  else
    fail "second train in the same folder: exit $rc, expected 1 naming pid $pid and the lock"; cat second.log
  fi
  # train --check says so too (it said ok, and the launch then failed on the lock).
  rc=0
  ds train --check --set run.dir=runs/sig >check.log 2>&1 || rc=$?
  [[ $rc -eq 1 ]] && grep -q "another downscale train (pid $pid on host .*) is using runs/sig/train" check.log &&
    ! grep -q "train --check: ok" check.log && ok "train --check beside a running train: exit 1, the lock named" ||
    { fail "train --check beside a running train: exit $rc"; cat check.log; }
  kill -TERM $pid; finish $pid
  expect_interrupted "train SIGTERM" sig.log 143 SIGTERM runs/sig
  grep -q "interrupted by SIGTERM at epoch 2 step 5 of [0-9]*; wrote runs/sig/train/checkpoint_last.h5 (resume with --resume)" sig.log ||
    fail "train: message does not name the step and the checkpoint: $(tail -1 sig.log)"
  [[ $(step_in_epoch runs/sig/train/checkpoint_last.h5) == 5 ]] || fail "train: checkpoint_last.h5 is not the mid-epoch one"
  # Resumed with fewer epochs than it is in: nothing to train (it said "final loss 0", wrote a
  # report of zeros and claimed checkpoints it never wrote, with exit 0).
  rc=0; ds train --resume --set run.dir=runs/sig --set train.epochs=1 >fewer.log 2>&1 || rc=$?
  if [[ $rc -eq 0 ]] && grep -q "holds 1 epochs (and 5 steps of epoch 2), all of train.epochs 1: nothing to train" fewer.log &&
     ! grep -q "wrote runs/sig/train/checkpoint_best.h5" fewer.log && [[ ! -e runs/sig/train/train_report.json ]] &&
     [[ $(step_in_epoch runs/sig/train/checkpoint_last.h5) == 5 ]]; then
    ok "resume past train.epochs: $(grep -o 'holds .*nothing to train' fewer.log)"
  else
    fail "resume with train.epochs 1 of a checkpoint in epoch 2: exit $rc"; tail -3 fewer.log
  fi
  # train --check says it before a launch (the batch script then launches nothing, exit 0); not
  # when epochs remain.
  # (On another rank count too: nothing trains, so its global batch does not matter.)
  rc=0; ds train --check --resume --ranks 7 --set run.dir=runs/sig --set train.epochs=1 >fewer_check.log 2>&1 || rc=$?
  rc2=0; ds train --check --resume --set run.dir=runs/sig >more_check.log 2>&1 || rc2=$?
  [[ $rc -eq 0 && $rc2 -eq 0 ]] &&
    grep -q "^finished: runs/sig/train/checkpoint_last.h5 holds 1 epochs (and 5 steps of epoch 2), all of train.epochs 1: nothing to train" fewer_check.log &&
    grep -q "train --check: ok" more_check.log && ! grep -q "^finished:" more_check.log &&
    ok "train --check --resume of a finished run: the finished: line" ||
    { fail "train --check --resume past train.epochs: exit $rc, then $rc2"; cat fewer_check.log more_check.log; }
  ds train --resume --set run.dir=runs/sig >resume.log 2>&1 || { fail "train --resume"; tail -3 resume.log; }
  grep -q 'resuming from .* at epoch 2, step 5 of' resume.log || fail "resume did not start at epoch 2 step 5"
  got=$(checksum runs/sig/train)
  [[ -n $want && $got == "$want" ]] && ok "resumed weights $got = uninterrupted" ||
    fail "resumed weights $got differ from the uninterrupted run's $want"
  # train_report.json says that its times cover the resumed run only, from epoch 2.
  grep -q '"resumed": true' runs/sig/train/train_report.json && grep -q '"first_epoch_of_this_run": 2' runs/sig/train/train_report.json &&
    grep -q '"resumed": false' runs/full/train/train_report.json || fail "train_report.json does not say which run it covers"
  cmp -s <(cut -d, -f1-3 runs/full/train/metrics.csv) <(cut -d, -f1-3 runs/sig/train/metrics.csv) ||
    fail "metrics.csv of the resumed run differs: $(cat runs/sig/train/metrics.csv)"
  # The resumed epoch's samples/s counts the samples this run trained (seconds x rate): 5 batches
  # fewer than the uninterrupted run's epoch 2, not the whole epoch over the shorter time.
  batch=$(sed -n 's/^ *batch_size: *\([0-9]*\).*/\1/p' configs/demo.yaml | head -1)
  /usr/bin/python3 - runs/full/train/metrics.csv runs/sig/train/metrics.csv "$batch" <<'PY' || fail "the resumed epoch's samples/s"
import csv, sys
def trained(path):
    r = {row["epoch"]: row for row in csv.DictReader(open(path))}["2"]
    return float(r["epoch_seconds"]) * float(r["samples_per_second"])
full, resumed, batch = trained(sys.argv[1]), trained(sys.argv[2]), int(sys.argv[3])
print("epoch 2 samples: uninterrupted %.1f, resumed run %.1f (5 batches of %d fewer expected)" % (full, resumed, batch))
assert abs(full - resumed - 5 * batch) < 0.01 * full, (full, resumed, batch)
PY
fi

echo "== train: SIGUSR1 (Slurm's warning before the time limit)"
if start_waiting usr1.log "epoch 1 step 3 " ds train --set run.dir=runs/usr1; then
  kill -USR1 $pid; finish $pid
  expect_interrupted "train SIGUSR1" usr1.log 75 SIGUSR1 runs/usr1
  [[ $(step_in_epoch runs/usr1/train/checkpoint_last.h5) == 3 ]] || fail "SIGUSR1: no mid-epoch checkpoint_last.h5"
  # A fresh job over it, warned by Slurm in its first epoch: the requeued job resumes with
  # --resume-auto, so the checkpoint must be this run's (it wrote nothing, exited 75, and the
  # requeue continued the earlier run); its history starts here, without the earlier epochs.
  cp runs/usr1/train/checkpoint_last.h5 runs/usr1/train/checkpoint_best.h5  # as an earlier run's best
  if start_waiting usr1b.log "epoch 1 step 2 " ds train --set run.dir=runs/usr1; then
    kill -USR1 $pid; finish $pid
    expect_interrupted "fresh run over an earlier one, SIGUSR1 in epoch 1" usr1b.log 75 SIGUSR1 runs/usr1
    [[ $(step_in_epoch runs/usr1/train/checkpoint_last.h5) == 2 ]] && ! grep -q "nothing written" usr1b.log &&
      [[ $(wc -l <runs/usr1/train/metrics.csv) == 1 && ! -e runs/usr1/train/checkpoint_best.h5 ]] &&
      ok "SIGUSR1 in a fresh run's first epoch: its own checkpoint (step 2), metrics.csv only its header, no best of the earlier run" ||
      fail "SIGUSR1 in a fresh run's first epoch over an earlier run: $(tail -1 usr1b.log)"
  fi
fi

if command -v mpirun >/dev/null; then
  echo "== train, mpirun -np 2: SIGTERM to rank 1 only; both ranks stop at the same step"
  mpi=(mpirun -np 2 --oversubscribe --bind-to none)
  "${mpi[@]}" "$bin" train --config configs/demo.yaml "${common[@]}" --set train.batch_size=8 --set run.dir=runs/mfull \
    >mfull.log 2>&1 || { cat mfull.log; exit 1; }
  want=$(checksum runs/mfull/train)
  export DOWNSCALE_TEST_WAIT_RANK=1
  if start_waiting msig.log "epoch 2 step 5 " "${mpi[@]}" -x DOWNSCALE_TEST_WAIT_AT \
       -x DOWNSCALE_TEST_WAIT_RANK "$bin" train --config configs/demo.yaml "${common[@]}" --set train.batch_size=8 \
       --set run.dir=runs/msig; then
    victim=""
    for p in $(pgrep -P $pid); do
      tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
    done
    if [[ -z $victim ]]; then fail "mpi: rank 1 not found"; kill $pid; finish $pid
    else
      kill -TERM "$victim"; finish $pid
      [[ $rc -eq 143 ]] || fail "mpi: exit $rc, expected 143"
      grep -q '^\[train rank 0\] downscale train: interrupted by SIGTERM at epoch 2 step 5 of [0-9]*; wrote .*checkpoint_last.h5' msig.log ||
        fail "mpi: rank 0 does not say, with its rank, that it wrote the checkpoint"
      # The signalled rank's handler line names it, as every other line of a rank does.
      grep -q '^\[train rank 1\] downscale: SIGTERM: stopping at the next safe point' msig.log ||
        fail "mpi: the stop handler's line does not name rank 1"
      [[ -n $(find runs/msig -name '*.tmp-*') ]] && fail "mpi: temporary files left"
      "${mpi[@]}" "$bin" train --resume --config configs/demo.yaml "${common[@]}" --set train.batch_size=8 \
        --set run.dir=runs/msig >mres.log 2>&1 || { fail "mpi: --resume"; tail -3 mres.log; }
      got=$(checksum runs/msig/train)
      [[ -n $want && $got == "$want" ]] && ok "mpi: exit 143 on both ranks; resumed weights $got = uninterrupted" ||
        fail "mpi: resumed weights $got differ from the uninterrupted run's $want"
    fi
  fi
  unset DOWNSCALE_TEST_WAIT_RANK
fi

echo "== predict: SIGTERM between batches; a stale temp in its folder is removed"
mkdir -p runs/full/predict && head -c 1000 /dev/zero >runs/full/predict/precipitation.nc.tmp-$dead
if start_waiting predict.log "predicting day 64 of 365" ds predict --set run.dir=runs/full --set predict.block_days=32; then
  # Between the blocks' batches (block_days 32: the third block), its temporary file being written.
  ls runs/full/predict/precipitation.nc.tmp-$pid >/dev/null 2>&1 || fail "predict: no temporary file while it predicts"
  kill -TERM $pid; finish $pid
  expect_interrupted predict predict.log 143 SIGTERM runs/full/predict
  [[ ! -e runs/full/predict/precipitation.nc ]] || fail "predict: an interrupted run wrote precipitation.nc"
fi

echo "== evaluate: SIGTERM between methods"
ds predict --set run.dir=runs/full >predict2.log 2>&1 || { cat predict2.log; exit 1; }
if start_waiting evaluate.log "scoring climatology" ds evaluate --set run.dir=runs/full; then
  kill -TERM $pid; finish $pid
  expect_interrupted evaluate evaluate.log 143 SIGTERM runs/full/evaluate
  [[ ! -e runs/full/evaluate/scores.json ]] || fail "evaluate: an interrupted run wrote scores.json"
fi

# A stop that arrives while an output is written (the last safe point is just before its rename):
# the previous output stays as it was, nothing new is renamed into place, and the exit says so.
# A replaced file is renamed into place: a new inode (two runs may write the same bytes).
inode() { stat -c %i "$1"; }
echo "== predict: SIGTERM while precipitation.nc is written; the previous file stays"
before=$(inode runs/full/predict/precipitation.nc)
if start_waiting predict3.log "writing runs/full/predict/precipitation.nc; " ds predict --set run.dir=runs/full; then
  kill -TERM $pid; finish $pid
  expect_interrupted "predict while writing" predict3.log 143 SIGTERM runs/full/predict
  [[ $(inode runs/full/predict/precipitation.nc) == "$before" ]] || fail "predict: the previous precipitation.nc was replaced"
fi

echo "== evaluate: SIGTERM after scoring, and between the score files and the figures"
ds evaluate --set run.dir=runs/full >evaluate2.log 2>&1 || { cat evaluate2.log; exit 1; }
before=$(inode runs/full/evaluate/scores.json)
if start_waiting evaluate3.log "scoring; nothing written" ds evaluate --set run.dir=runs/full; then
  kill -TERM $pid; finish $pid
  expect_interrupted "evaluate after scoring" evaluate3.log 143 SIGTERM runs/full/evaluate
  [[ $(inode runs/full/evaluate/scores.json) == "$before" ]] || fail "evaluate: scores.json was replaced"
fi
scores=$(inode runs/full/evaluate/scores.nc) summary=$(inode runs/full/evaluate/summary.png)
if start_waiting evaluate4.log "drawing the figures" ds evaluate --set run.dir=runs/full; then
  kill -TERM $pid; finish $pid
  expect_interrupted "evaluate before the figures" evaluate4.log 143 SIGTERM runs/full/evaluate
  grep -q "scores.json, scores.csv and scores.nc are written" evaluate4.log || fail "evaluate: the stop does not say what was written"
  [[ $(inode runs/full/evaluate/scores.nc) != "$scores" ]] || fail "evaluate: scores.nc was not written before the figures"
  [[ $(inode runs/full/evaluate/summary.png) == "$summary" ]] || fail "evaluate: summary.png was replaced after the stop"
fi

echo "== synth: SIGTERM while writing; nothing written, exit 143"
if start_waiting synth.log "writing the synthetic dataset" ds synth --set synth.dir=data/synth_stop; then
  kill -TERM $pid; finish $pid
  mkdir -p data/synth_stop
  expect_interrupted "synth while writing" synth.log 143 SIGTERM data/synth_stop
  if [[ -n $(find data/synth_stop -name '*.nc') ]]; then fail "synth: an interrupted run wrote $(find data/synth_stop -name '*.nc')"; fi
fi

[[ $failures -eq 0 ]] || { echo "$failures failure(s)"; exit 1; }
echo "faults signals: ok"
