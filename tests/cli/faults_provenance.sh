#!/usr/bin/env bash
# Faults that used to end with exit 0 and wrong data (issue 12, provenance rows), each against a
# small demo store built with the real command (synth -> fetch -> preprocess, three years):
#   1. a checkpoint used with a store whose predictors are in another order: predict and
#      train --resume exit 3 naming the swapped channel; evaluate refuses a prediction of
#      another store; a store rebuilt with another wet threshold or with the validation and
#      test years swapped: predict exit 3;
#   2. temperature in degC labelled K, a single 1e30, negative precipitation, a field that hardly
#      varies over the training days and then moves: preprocess exit 3 naming file, variable,
#      date and point, no store written; precipitation in kg m-2 s-1
#      labelled mm/day: exit 3 (no wet day anywhere);
#   3. a NaN in the store's x, or a value 5000 training sd out: train exits 3 naming split,
#      date and channel;
#      an inconsistent channels attribute, a format-2 store: refused (exit 3), no crash;
#   4. weights that overflow: predict exits 1 naming a date and point, writes nothing; a NaN
#      weight, a flipped bit, a damaged model_spec, a flipped byte in the training state
#      (rng_state: the checksum state_sha256), a step_in_epoch or rng_state no run writes: exit 3
#      naming the checkpoint (and the attribute); output biases that
#      give thousands of mm/day or none: exit 1 naming both means; NaN predictors, or
#      3e38 ones, on a day of a later block: exit 3 naming it, nothing left; a diverging learning
#      rate names epoch and step;
#   5. a checkpoint of `mpirun -np 2` resumed on one rank: refused (exit 2) naming both global
#      batches;
#   6. new predictors far outside the training range: predicted, with a warning (count, worst);
#      so far out that the precipitation is thousands of mm/day: exit 1, the earlier file kept,
#      new predictors in other units converted (or refused, exit 3, where they do not convert),
#      in blocks already after the first year;
#   7. a prediction made before the checkpoint was trained again: evaluate exit 3, until predicted again.
#   usage: faults_provenance.sh <downscale binary> <source dir>
set -euo pipefail
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp -r "$src/configs" .
py=/usr/bin/python3
years=(--set "synth.years=[2000,2002]" --set "fetch.years=[2000,2002]" --set "preprocess.train_years=[2000,2000]"
       --set "preprocess.validation_years=[2001,2001]" --set "preprocess.test_years=[2002,2002]")
common=("${years[@]}" --set run.threads=1 --set train.epochs=1)
ds() { "$bin" "$1" --config configs/demo.yaml "${common[@]}" "${@:2}"; }
# expect <exit code> <text the message must hold> <command...>
expect() {
  local want=$1 text=$2 rc=0 out
  shift 2
  out=$("$@" 2>&1) || rc=$?
  [[ $rc -eq $want ]] || { echo "FAIL: expected exit $want, got $rc from: $*"; echo "$out" | tail -5; exit 1; }
  grep -qF -- "$text" <<<"$out" || { echo "FAIL: message lacks '$text' from: $*"; echo "$out" | tail -5; exit 1; }
  echo "ok ($rc): $(grep -F -- "$text" <<<"$out" | tail -1 | cut -c1-220)"
  last=$out  # for a check of what the message must not say
}
# A copy of the demo run's fetch folder under runs/<name>, to corrupt.
copy_fetch() { rm -rf "runs/$1"; mkdir -p "runs/$1"; cp -r runs/demo/fetch "runs/$1/"; }

ds synth 2>/dev/null
ds fetch 2>/dev/null
ds preprocess 2>/dev/null
ds train 2>/dev/null
ds predict 2>/dev/null

echo "== 1. channels in another order"
copy_fetch swap
$py - <<'PY'
import json
p = "runs/swap/fetch/manifest.json"
m = json.load(open(p))
m["predictors"][0], m["predictors"][1] = m["predictors"][1], m["predictors"][0]
json.dump(m, open(p, "w"))
PY
ds preprocess --set run.dir=runs/swap 2>/dev/null
mkdir -p runs/swap/train
cp runs/demo/train/checkpoint_last.h5 runs/swap/train/
expect 3 "the same 20 channels in another order (channel 1 is z@500 vs z@700)" \
  ds predict --set run.dir=runs/swap --set predict.checkpoint=last
expect 3 "channels in another order" ds train --resume --set run.dir=runs/swap --set train.epochs=2
mkdir -p runs/swap/predict
cp runs/demo/predict/precipitation.nc runs/swap/predict/
expect 3 "predicted with a model of another store" ds evaluate --set run.dir=runs/swap

echo "== 1a. a prediction whose grid was moved after predict"
# Its counts of boxes the store's, its boxes a quarter degree north: evaluate compared counts only
# and scored it against the store's observations (exit 0).
rm -rf runs/moved && mkdir -p runs/moved && cp -r runs/demo/fetch runs/demo/preprocess runs/demo/train runs/demo/predict runs/moved/
$py -c "
import netCDF4
with netCDF4.Dataset('runs/moved/predict/precipitation.nc', 'a') as d: d['lat'][:] = d['lat'][:] + 0.25"
expect 3 "runs/moved/predict/precipitation.nc: lat 0 is" ds evaluate --set run.dir=runs/moved
grep -qF "another grid than the store's" <<<"$last" || { echo "FAIL: the moved grid's message: $last"; exit 1; }

echo "== 1c. a prediction or a store edited to values predict and preprocess never write"
# A prediction times 1e30, in K, or all NaN, and a store whose test observations were given 1e30
# with h5py: evaluate scored each (tables of 1e30s or NaNs, exit 0).
for edit in pscaled pkelvin pnan pobs; do
  rm -rf runs/$edit && mkdir -p runs/$edit && cp -r runs/demo/fetch runs/demo/preprocess runs/demo/train runs/demo/predict runs/$edit/
done
$py -c "
import netCDF4, numpy as np, h5py
np.seterr(all='ignore')  # the fill values times 1e30 overflow, as an edit would
with netCDF4.Dataset('runs/pscaled/predict/precipitation.nc', 'a') as d: d['pr'][:] = d['pr'][:] * 1e30
with netCDF4.Dataset('runs/pkelvin/predict/precipitation.nc', 'a') as d: d['pr'].units = 'K'
with netCDF4.Dataset('runs/pnan/predict/precipitation.nc', 'a') as d: d['pr_expected'][:] = np.ma.masked
with h5py.File('runs/pobs/preprocess/store.h5', 'r+') as f: f['test/obs'][3] = f['test/obs'][3] + np.float32(1e30)"
expect 3 "runs/pscaled/predict/precipitation.nc: pr is " ds evaluate --set run.dir=runs/pscaled
grep -qF "(a modelled box), outside [0, " <<<"$last" || { echo "FAIL: the scaled prediction's message: $last"; exit 1; }
expect 3 "runs/pkelvin/predict/precipitation.nc: variable pr is in 'K', not the 'kg m-2 s-1'" ds evaluate --set run.dir=runs/pkelvin
expect 3 "runs/pnan/predict/precipitation.nc: pr_expected is nan on " ds evaluate --set run.dir=runs/pnan
expect 3 "/test/obs is 1e+30, outside [0, " ds evaluate --set run.dir=runs/pobs
grep -qF "the range preprocess wrote (obs_range) on " <<<"$last" && grep -qF "(row 3)" <<<"$last" ||
  { echo "FAIL: the edited observations' message: $last"; exit 1; }
for edit in pscaled pkelvin pnan pobs; do
  [ ! -e runs/$edit/evaluate/scores.json ] || { echo "FAIL: evaluate of $edit wrote scores"; exit 1; }
done

echo "== 1b. preprocess again with other settings under trained models"
# The store is replaced (exit 0), with a warning naming the checkpoints trained on the store it
# replaced; predict then names what a rerun of preprocess can change. The same settings again,
# or back to the checkpoints' store (where they fit again): no warning.
copy_fetch again
ds preprocess --set run.dir=runs/again 2>/dev/null
mkdir -p runs/again/train/other
cp runs/demo/train/checkpoint_best.h5 runs/again/train/
cp runs/demo/train/checkpoint_best.h5 runs/again/train/other/
longer=(--set run.dir=runs/again --set "preprocess.train_years=[2000,2001]" --set "preprocess.validation_years=[2002,2002]"
        --set "preprocess.test_years=[]")
out=$(ds preprocess "${longer[@]}" 2>&1) || { echo "$out"; exit 1; }
grep -qF "runs/again/preprocess/store.h5 was rebuilt and differs from the store it replaced in its statistics" <<<"$out" &&
grep -qF "the 2 checkpoint(s) trained on the old store no longer fit it, and predict and train --resume refuse them: runs/again/train/checkpoint_best.h5, runs/again/train/other/checkpoint_best.h5" <<<"$out" ||
  { echo "FAIL: no warning naming the change and both checkpoints:"; echo "$out" | tail -3; exit 1; }
echo "ok: $(grep -F 'was rebuilt' <<<"$out" | cut -c1-200)"
out=$(ds preprocess "${longer[@]}" 2>&1)
! grep -q "was rebuilt and differs" <<<"$out" || { echo "FAIL: a warning for a store rebuilt the same"; exit 1; }
expect 3 "preprocess was run again with another training period, source, regrid method or fill" \
  ds predict --set run.dir=runs/again --set predict.checkpoint=runs/again/train/other/checkpoint_best.h5 --set train.name=other
out=$(ds preprocess --set run.dir=runs/again 2>&1)
! grep -q "was rebuilt and differs" <<<"$out" || { echo "FAIL: a warning though no checkpoint was trained on the replaced store"; exit 1; }
ds predict --set run.dir=runs/again --set predict.checkpoint=runs/again/train/other/checkpoint_best.h5 --set train.name=other 2>/dev/null ||
  { echo "FAIL: the checkpoints do not fit their store again"; exit 1; }
# The same predictors and statistics, but another wet threshold (the amounts the model learnt
# lie above 0.99 mm) or the validation and test years swapped (the test split would hold the days
# that chose the checkpoint): predict exited 0 with both. Refused, naming what differs.
other=(--set run.dir=runs/again --set predict.checkpoint=runs/again/train/other/checkpoint_best.h5 --set train.name=other)
out=$(ds preprocess --set run.dir=runs/again --set preprocess.wet_threshold=0.5 2>&1) || { echo "$out"; exit 1; }
grep -qF "runs/again/preprocess/store.h5 was rebuilt with the same predictors and statistics but other training days" <<<"$out" &&
  grep -qF "refuse them: runs/again/train/checkpoint_best.h5, runs/again/train/other/checkpoint_best.h5" <<<"$out" ||
  { echo "FAIL: no warning naming the checkpoints of the old splits:"; echo "$out" | tail -3; exit 1; }
expect 3 "checkpoint_best.h5: trained on other training days than the train split of runs/again/preprocess/store.h5" \
  ds predict "${other[@]}"
# evaluate of the prediction made before: its store identity is the same (the predictors'), but
# its wet days are the old store's (it was scored, with the new store's threshold recorded).
expect 3 "runs/again/predict/other/precipitation.nc: predicted with a wet-day threshold of 0.99 mm (its wet_day_threshold_mm) but runs/again/preprocess/store.h5 was built with preprocess.wet_threshold 0.5" \
  ds evaluate "${other[@]}"
ds preprocess --set run.dir=runs/again --set "preprocess.validation_years=[2002,2002]" --set "preprocess.test_years=[2001,2001]" 2>/dev/null
expect 3 "checkpoint_best.h5: its best epoch was chosen on another validation split than runs/again/preprocess/store.h5" \
  ds predict "${other[@]}"
# A fresh train over such a checkpoint does not offer --resume, which would refuse it, but says why.
cp runs/again/train/other/checkpoint_best.h5 runs/again/train/other/checkpoint_last.h5
out=$(ds train --set run.dir=runs/again --set train.name=other --set train.epochs=1 2>&1) || { echo "$out"; exit 1; }
grep -qF "replaces runs/again/train/other/checkpoint_last.h5, with its metrics.csv, at the end of its first epoch (it cannot be resumed: runs/again/train/other/checkpoint_last.h5: its best epoch was chosen on another validation split" <<<"$out" &&
  ! grep -qF "pass --resume" <<<"$out" || { echo "FAIL: train over a checkpoint of the old splits:"; echo "$out" | grep -i afresh; exit 1; }

echo "== 2. implausible values in fetched files"
copy_fetch celsius
$py -c "
import netCDF4
with netCDF4.Dataset('runs/celsius/fetch/predictors/ta@850.nc', 'a') as d: d['ta'][:] = d['ta'][:] - 273.15"
expect 3 "variable 'ta' is " ds preprocess --set run.dir=runs/celsius
expect 3 "outside its plausible range [150, 350] K" ds preprocess --set run.dir=runs/celsius
[[ ! -e runs/celsius/preprocess/store.h5 ]] || { echo "FAIL: a store was written from degC labelled K"; exit 1; }
copy_fetch huge
$py -c "
import netCDF4
with netCDF4.Dataset('runs/huge/fetch/predictors/z@500.nc', 'a') as d:
    # by coordinate: fetch's cut reaches past the box to the predictor grid's cells
    d['z'][400, list(d['lat'][:]).index(36), list(d['lon'][:]).index(-100)] = 1e30"
expect 3 "variable 'z' is 1e+30 m2 s-2 on 2001-02-04 at lat 36, lon -100" ds preprocess --set run.dir=runs/huge
# A field that hardly varies over the training year (250 K +- 1 mK) and then moves by 2 K: 2000
# of its standard deviations. preprocess refuses to write the store every stage would refuse,
# naming the box and the day, instead of a store that "rebuilding" would only make again.
copy_fetch flat
$py -c "
import netCDF4, numpy as np
with netCDF4.Dataset('runs/flat/fetch/predictors/ta@850.nc', 'a') as d:
    n = d['ta'].shape[0]
    d['ta'][:366] = (250 + 1e-3 * (-1) ** np.arange(366))[:, None, None] * np.ones(d['ta'].shape[1:])
    d['ta'][366:] = 252"
expect 3 "on 2001-01-01 at lat" ds preprocess --set run.dir=runs/flat
expect 3 "the field hardly varies there over the training days" ds preprocess --set run.dir=runs/flat
[[ ! -e runs/flat/preprocess/store.h5 ]] || { echo "FAIL: a store written from the flat field"; exit 1; }
copy_fetch negative
$py -c "
import netCDF4
with netCDF4.Dataset('runs/negative/fetch/predictand/pr.nc', 'a') as d: d['pr'][10, 4, 4] = -3.0"
expect 3 "variable 'pr' is -3 mm/day on 2000-01-11" ds preprocess --set run.dir=runs/negative
copy_fetch perseconds
$py -c "
import netCDF4
with netCDF4.Dataset('runs/perseconds/fetch/predictand/pr.nc', 'a') as d: d['pr'][:] = d['pr'][:] / 86400"
expect 3 "no day at or above the wet-day threshold on any modelled box" ds preprocess --set run.dir=runs/perseconds

echo "== 3. corrupt stores"
for run in nan huge channels format2; do
  mkdir -p runs/$run/preprocess
  cp runs/demo/preprocess/store.h5 runs/$run/preprocess/
done
$py -c "
import h5py, numpy as np
with h5py.File('runs/nan/preprocess/store.h5', 'r+') as f: f['train/x'][100, 3, 2, 5] = np.nan
with h5py.File('runs/huge/preprocess/store.h5', 'r+') as f: f['train/x'][100, 3, 2, 5] = -5000
with h5py.File('runs/channels/preprocess/store.h5', 'r+') as f:
    f.attrs['channels'] = np.bytes_(','.join(f.attrs['channels'].decode().split(',')[:-1]))
with h5py.File('runs/format2/preprocess/store.h5', 'r+') as f: f.attrs['format'] = np.bytes_('downscale-store-2')"
expect 3 "/train/x is nan on 2000-04-10 (row 100), channel z@1000" ds train --set run.dir=runs/nan
expect 3 "/train/x is -5000, more than 1000 training standard deviations from the training mean (no weather is) on 2000-04-10 (row 100), channel z@1000" \
  ds train --set run.dir=runs/huge
expect 3 "/stats/mean is 20 x 8 x 12 but the channels attribute (19)" ds train --set run.dir=runs/channels
expect 3 "a training store of an older format (downscale-store-2); rebuild it" ds train --set run.dir=runs/format2

echo "== 4. NaN weights, NaN predictors in a later block, divergence"
mkdir -p runs/nanw/preprocess runs/nanw/train
cp runs/demo/preprocess/store.h5 runs/nanw/preprocess/
cp runs/demo/train/checkpoint_best.h5 runs/nanw/train/
cp runs/demo/train/checkpoint_best.h5 good.h5
# Finite weights so large (x 1e30) that the output overflows: exit 1 naming the first day and
# point whose output is not finite, nothing written.
$py -c "
import h5py, numpy as np
with h5py.File('runs/nanw/train/checkpoint_best.h5', 'r+') as f:
    names = []
    f['weights'].visit(lambda n: names.append(n) if isinstance(f['weights'][n], h5py.Dataset) else None)
    for n in names: f['weights'][n][...] = f['weights'][n][...] * np.float32(1e30)"
expect 1 "on 2002-01-01 at lat" ds predict --set run.dir=runs/nanw
[[ ! -e runs/nanw/predict/precipitation.nc ]] || { echo "FAIL: NaN predictions written"; exit 1; }
# A NaN weight (training never saves one: a damaged file): exit 3 when loaded, naming the
# checkpoint and the tensor (it was exit 1 naming a date, or "training diverged" on resume).
cp good.h5 runs/nanw/train/checkpoint_best.h5
$py -c "
import h5py, numpy as np
with h5py.File('runs/nanw/train/checkpoint_best.h5', 'r+') as f: f['weights/head/b'][0, 1, 0, 0] = np.nan"
expect 3 "runs/nanw/train/checkpoint_best.h5: /weights/head/b holds NaN (element 1): the checkpoint is damaged" \
  ds predict --set run.dir=runs/nanw
# One flipped bit in a weight's bytes on disk (it went through: predict and evaluate exit 0 with
# other scores): every checkpoint tensor carries HDF5's Fletcher-32 checksum, so exit 3 naming it.
cp good.h5 runs/nanw/train/checkpoint_best.h5
$py -c "
import h5py
with h5py.File('runs/nanw/train/checkpoint_best.h5', 'r') as f: at = f['weights/head/b'].id.get_chunk_info(0).byte_offset
with open('runs/nanw/train/checkpoint_best.h5', 'r+b') as g:
    g.seek(at + 2); b = g.read(1); g.seek(at + 2); g.write(bytes([b[0] ^ 0x08]))"
expect 3 "runs/nanw/train/checkpoint_best.h5: cannot read dataset /weights/head/b (its Fletcher-32 checksum does not match" \
  ds predict --set run.dir=runs/nanw
# A model_spec no JSON reader takes, and a model this version does not build: exit 3 naming the
# file (they were a message without the file, and a configuration error, exit 2).
cp good.h5 runs/nanw/train/checkpoint_best.h5
$py -c "
import h5py
import numpy as np
with h5py.File('runs/nanw/train/checkpoint_best.h5', 'r+') as f:
    f.attrs['model_spec'] = np.bytes_(bytes(f.attrs['model_spec']).replace(b'\"demo\"', b'\"dem{\"'))"
expect 3 "runs/nanw/train/checkpoint_best.h5: the checkpoint's model 'dem{' is not one this version of downscale builds" \
  ds predict --set run.dir=runs/nanw
# The same from train --resume and its --check (they said 'the configuration asks for another model', exit 2).
cp runs/nanw/train/checkpoint_best.h5 runs/nanw/train/checkpoint_last.h5
expect 3 "runs/nanw/train/checkpoint_last.h5: the checkpoint's model 'dem{' is not one this version of downscale builds" \
  ds train --resume --set run.dir=runs/nanw
expect 3 "runs/nanw/train/checkpoint_last.h5: the checkpoint's model 'dem{' is not one this version of downscale builds" \
  ds train --check --resume --set run.dir=runs/nanw
rm runs/nanw/train/checkpoint_last.h5
$py -c "
import h5py
import numpy as np
with h5py.File('runs/nanw/train/checkpoint_best.h5', 'r+') as f: f.attrs['model_spec'] = np.bytes_(b'{\"name\": ')"
expect 3 "runs/nanw/train/checkpoint_best.h5: attribute model_spec:" ds predict --set run.dir=runs/nanw
# The training state (epoch, step, shuffle, optimizer steps...): a flipped byte in rng_state
# resumed another shuffle, exit 0, and an edited step_in_epoch or epoch "trained" epochs of no
# steps or twice; the attributes' checksum state_sha256 and their ranges refuse them, exit 3.
cp good.h5 runs/nanw/train/checkpoint_last.h5
$py -c "
import h5py, numpy as np
with h5py.File('runs/nanw/train/checkpoint_last.h5', 'r+') as f:
    r = bytes(f.attrs['rng_state']); f.attrs['rng_state'] = np.bytes_(r[:5] + bytes([r[5] ^ 0x01]) + r[6:])"
expect 3 "runs/nanw/train/checkpoint_last.h5: its training state (the attributes epoch, step_in_epoch, rng_state, optimizer_steps and the rest) does not match its checksum state_sha256: the checkpoint was damaged or edited" \
  ds train --resume --set run.dir=runs/nanw --set train.epochs=2
expect 3 "does not match its checksum state_sha256" ds train --check --resume --set run.dir=runs/nanw --set train.epochs=2
# Without the checksum (as an earlier version wrote): the ranges.
cp good.h5 runs/nanw/train/checkpoint_last.h5
$py -c "
import h5py
with h5py.File('runs/nanw/train/checkpoint_last.h5', 'r+') as f: del f.attrs['state_sha256']; f.attrs['step_in_epoch'] = -5"
expect 3 "runs/nanw/train/checkpoint_last.h5: attribute step_in_epoch is -5: the checkpoint was damaged" \
  ds train --resume --set run.dir=runs/nanw --set train.epochs=2
$py -c "
import h5py
with h5py.File('runs/nanw/train/checkpoint_last.h5', 'r+') as f: f.attrs['step_in_epoch'] = 99999"
expect 3 "runs/nanw/train/checkpoint_last.h5: attribute step_in_epoch is 99999, past the 12 steps of an epoch at a global batch of 32" \
  ds train --resume --set run.dir=runs/nanw --set train.epochs=2
$py -c "
import h5py, numpy as np
with h5py.File('runs/nanw/train/checkpoint_last.h5', 'r+') as f: f.attrs['step_in_epoch'] = 0; f.attrs['rng_state'] = np.bytes_(b'garbage')"
expect 3 "attribute rng_state is no random generator's state" ds train --resume --set run.dir=runs/nanw --set train.epochs=2
rm runs/nanw/train/checkpoint_last.h5
# A test day whose predictors are NaN (day 200 of 365, in the seventh block of 32): exit 3 naming
# the day when its block is read, after six blocks went into the temporary file, nothing left.
# (Before the check predict exited 0: the network's ReLUs turned the NaN into a plausible field.)
mkdir -p runs/nanx/preprocess runs/nanx/train
cp runs/demo/preprocess/store.h5 runs/nanx/preprocess/
cp runs/demo/train/checkpoint_best.h5 runs/nanx/train/
$py -c "
import h5py, numpy as np
with h5py.File('runs/nanx/preprocess/store.h5', 'r+') as f: f['test/x'][200] = np.nan"
expect 3 "/test/x is nan on 2002-07-20 (row 200), channel" ds predict --set run.dir=runs/nanx --set predict.block_days=32
[[ -z $(ls -A runs/nanx/predict 2>/dev/null) ]] || { echo "FAIL: left in runs/nanx/predict: $(ls runs/nanx/predict)"; exit 1; }
# A finite but absurd predictor (3e38, the float's edge) on day 200: its convolutions overflow
# into NaNs that the ReLUs map to 0, and the output looked plausible (exit 0 before). Refused
# when its block is read, like a NaN: beyond 1000 training sd (io/store_checks.h).
mkdir -p runs/hugex/preprocess runs/hugex/train
cp runs/demo/preprocess/store.h5 runs/hugex/preprocess/
cp runs/demo/train/checkpoint_best.h5 runs/hugex/train/
$py -c "
import h5py, numpy as np
with h5py.File('runs/hugex/preprocess/store.h5', 'r+') as f: f['test/x'][200, 1] = np.float32(3e38)"
expect 3 "/test/x is 3e+38, more than 1000 training standard deviations from the training mean (no weather is) on 2002-07-20 (row 200), channel" \
  ds predict --set run.dir=runs/hugex --set predict.block_days=32
[[ -z $(ls -A runs/hugex/predict 2>/dev/null) ]] || { echo "FAIL: left in runs/hugex/predict: $(ls runs/hugex/predict)"; exit 1; }
# Output biases off (the amounts' log-shape head +8, the wet-day head -8): every value finite,
# thousands of mm/day or almost none, and written with exit 0 before. Refused naming both means
# (predict.plausible_ratio, 5); at 0 the check is off and the file is written.
for head in "1 8" "0 -8"; do  # channel, bias shift
  read -r channel shift <<<"$head"
  rm -rf runs/level && mkdir -p runs/level/preprocess runs/level/train
  cp runs/demo/preprocess/store.h5 runs/level/preprocess/
  cp runs/demo/train/checkpoint_best.h5 runs/level/train/
  $py -c "
import h5py
with h5py.File('runs/level/train/checkpoint_best.h5', 'r+') as f: f['weights/head/b'][0, $channel, 0, 0] += $shift"
  expect 1 "beyond a factor 5 either way, predict.plausible_ratio" ds predict --set run.dir=runs/level
  [[ -z $(ls -A runs/level/predict 2>/dev/null) ]] || { echo "FAIL: left in runs/level/predict: $(ls runs/level/predict)"; exit 1; }
done
expect 0 "wrote runs/level/predict/precipitation.nc" ds predict --set run.dir=runs/level --set predict.plausible_ratio=0
expect 2 "key 'predict.plausible_ratio' is 1, must be above 1" ds predict --set run.dir=runs/level --set predict.plausible_ratio=1
# Divergence: config validation now refuses the learning rates that would blow up (train.learning_rate
# <= 10), so the weights are blown up instead: resumed from a checkpoint scaled by 1e30, the first
# step's loss is not finite.
mkdir -p runs/lr/preprocess runs/lr/train
cp runs/demo/preprocess/store.h5 runs/lr/preprocess/
cp runs/demo/train/checkpoint_last.h5 runs/lr/train/
$py -c "
import h5py
with h5py.File('runs/lr/train/checkpoint_last.h5', 'r+') as f:
    names = []
    f['weights'].visit(lambda n: names.append(n) if isinstance(f['weights'][n], h5py.Dataset) else None)
    for n in names: f['weights'][n][...] = f['weights'][n][...] * 1e30"
expect 1 "training diverged: the loss is" ds train --resume --set run.dir=runs/lr --set train.epochs=50

echo "== 5. resume on another rank count"
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false
  mkdir -p runs/ranks/preprocess
  cp runs/demo/preprocess/store.h5 runs/ranks/preprocess/
  mpirun -np 2 --oversubscribe --bind-to none "$bin" train --config configs/demo.yaml "${common[@]}" \
    --set run.dir=runs/ranks --set train.batch_size=16 2>/dev/null
  expect 2 "global batch of 32 samples per step; this run's is 16 (train.batch_size 16 x 1 rank(s)): resume on 2 rank(s)" \
    ds train --resume --set run.dir=runs/ranks --set train.batch_size=16 --set train.epochs=2
  # The batch script's check before launch (train --check --ranks N): refused there, not by every rank.
  expect 2 "global batch of 32 samples per step; this run's is 48 (train.batch_size 16 x 3 rank(s))" \
    ds train --check --ranks 3 --resume --set run.dir=runs/ranks --set train.batch_size=16 --set train.epochs=2
  ds train --check --ranks 2 --resume-auto --set run.dir=runs/ranks --set train.batch_size=16 --set train.epochs=2 \
    | grep -q "global batch 16 x 2 rank(s) = 32, as the checkpoint was trained" || { echo "train --check --ranks 2 did not accept the 2-rank checkpoint"; exit 1; }
  ds train --check --resume --set run.dir=runs/ranks --set train.batch_size=16 --set train.epochs=2 \
    | grep -q "trained with a global batch of 32" || { echo "train --check without --ranks: no note of the global batch"; exit 1; }
  # Another rate or seed on the resume: said before launch as the ranks would say it (here with
  # the ranks the checkpoint's global batch implies: 32 / 16 = 2, so 0.0005 x 2).
  ds train --check --resume --set run.dir=runs/ranks --set train.batch_size=16 --set train.epochs=2 \
    --set train.learning_rate=0.0005 --set train.seed=7 > ranks_check.out
  grep -q "trained at a learning rate of 0.002 (after warmup); this run goes on at 0.001 (train.learning_rate 0.0005 x 2 rank(s))" ranks_check.out ||
    { cat ranks_check.out; echo "train --check --resume: no note of the learning-rate change"; exit 1; }
  grep -q "was trained with train.seed 1; this run goes on with 7: from epoch 2 on" ranks_check.out ||
    { cat ranks_check.out; echo "train --check --resume: no note of the seed change"; exit 1; }
else
  echo "skipped: no mpirun"
fi

echo "== 6. new predictors far from the training range"
copy_fetch far
cp runs/far/fetch/predictors/ua@850.nc runs/far/ua.nc
# 15 m/s more wind (8 sd on average, 13 at the most): predicted, with both warnings (the demo
# model's precipitation then 1.4 times the training's; 5 times at 30 m/s).
$py -c "
import netCDF4
with netCDF4.Dataset('runs/far/fetch/predictors/ua@850.nc', 'a') as d: d['ua'][:] = d['ua'][:] + 15"
expect 0 "standardized predictor values sit more than 10 standard deviations" \
  ds predict --set predict.predictors=runs/far/fetch
# The same counts with the device check on (it reads the first batches before the pass reads every
# day: they were counted twice in the warning's figures).
far_lines=$(grep -E "standard deviations|departs" <<<"$last" | sed 's/^\[[^]]*\] //' | sed 's/^\[[^]]*\] //')
expect 0 "standardized predictor values sit more than 10 standard deviations" \
  ds predict --set predict.predictors=runs/far/fetch --set train.device_check=true
[[ $(grep -E "standard deviations|departs" <<<"$last" | sed 's/^\[[^]]*\] //' | sed 's/^\[[^]]*\] //') == "$far_lines" ]] ||
  { echo "FAIL: the device check changed the new predictors' warnings:"; echo "$far_lines"; grep -E "standard deviations|departs" <<<"$last"; exit 1; }
# 70 m/s more (about 38 sd): the network's answer, thousands of mm/day, was written with exit 0
# after the warnings; now the level is refused (predict.plausible_ratio) and the old file stays.
# It is refused after the first year, not at the end: in one first block of 384 days by default,
# and after 12 blocks of 32 days with predict.block_days=32 (the level summed over blocks).
before=$(sha256sum runs/demo/predict/precipitation_far.nc)
cp runs/far/ua.nc runs/far/fetch/predictors/ua@850.nc
$py -c "
import netCDF4
with netCDF4.Dataset('runs/far/fetch/predictors/ua@850.nc', 'a') as d: d['ua'][:] = d['ua'][:] + 70"
# The first block is cut after the first year (whole batches), though this small domain's default
# block would hold every day; the refusal comes with the warning that names the cause (ua@850).
expect 1 "times theirs (beyond a factor 5 either way, predict.plausible_ratio) (after the first 384 of 1096 days; the rest was not predicted)" \
  ds predict --set predict.predictors=runs/far/fetch
grep -qE "predictor ua@850 averages \+[0-9.]+ standard deviations .* over the 384 days read" <<<"$last" ||
  { echo "FAIL: the early refusal without the warning naming ua@850: $last"; exit 1; }
expect 1 "predict.plausible_ratio) (after the first 384 of 1096 days; the rest was not predicted)" \
  ds predict --set predict.predictors=runs/far/fetch --set predict.block_days=32
[[ $(sha256sum runs/demo/predict/precipitation_far.nc) == "$before" ]] || { echo "FAIL: precipitation_far.nc replaced"; exit 1; }
# 100 m/s more (54 sd on average over the domain): no climate, a unit; refused as such (exit 3,
# naming the file and field) before the level check blames the model.
cp runs/far/ua.nc runs/far/fetch/predictors/ua@850.nc
$py -c "
import netCDF4
with netCDF4.Dataset('runs/far/fetch/predictors/ua@850.nc', 'a') as d: d['ua'][:] = d['ua'][:] + 100"
expect 3 "runs/far/fetch/predictors/ua@850.nc: variable 'ua': predictor ua@850 averages +5" ds predict --set predict.predictors=runs/far/fetch
grep -qF "(more than 50), its mean" <<<"$last" && grep -qF "no climate is so far" <<<"$last" ||
  { echo "FAIL: the impossible departure's message: $last"; exit 1; }
[[ $(sha256sum runs/demo/predict/precipitation_far.nc) == "$before" ]] || { echo "FAIL: precipitation_far.nc replaced"; exit 1; }
# The same predictors fetched in other units (ta@850 in degC, ua@850 in km/h, as another
# dataset definition writes them): converted to the training data's (the store's channel_units),
# the same prediction; in units that do not convert (ua in m): exit 3 naming file and both units.
copy_fetch same
copy_fetch units
$py - <<'PY'
import json, netCDF4
d = "runs/units/fetch"
m = json.load(open(d + "/manifest.json"))
for p in m["predictors"]:
    if p["name"] in ("ta@850", "ua@850"):
        scale, offset, units = (1.0, -273.15, "degC") if p["name"] == "ta@850" else (3.6, 0.0, "km h-1")
        with netCDF4.Dataset(d + "/" + p["file"], "a") as f:
            v = f[p["variable"]]; v.set_auto_mask(False); v[:] = v[:] * scale + offset; v.units = units
        p["units"] = units
        p["valid_range"] = [x * scale + offset for x in p["valid_range"]]
json.dump(m, open(d + "/manifest.json", "w"))
PY
ds predict --set predict.predictors=runs/same/fetch >/dev/null 2>&1 || { echo "FAIL: predict on a copy of the fetch"; exit 1; }
expect 0 "the new predictors (predict.predictors) converted to the training data's units (ta@850 from degC to K, ua@850 from km h-1 to m s-1)" \
  ds predict --set predict.predictors=runs/units/fetch
$py - <<'PY' || exit 1
import netCDF4, numpy as np
a = netCDF4.Dataset("runs/demo/predict/precipitation_same.nc")["pr_expected"][:]
b = netCDF4.Dataset("runs/demo/predict/precipitation_units.nc")["pr_expected"][:]
worst = float(np.max(np.abs(a - b)))
print("ok: converted units give the same prediction: largest difference %.2e kg m-2 s-1 (mean %.2e)" % (worst, float(np.mean(a))))
# float32 rounding of the converted inputs (degC + 273.15, km/h / 3.6), through the network
assert worst < 1e-4 * float(np.max(a)), worst
PY
# Relabelled in the file alone, the file is no longer as fetched (its manifest says km h-1);
# relabelled in both (a dataset that writes a length under the wind's name), no conversion exists.
$py -c "
import netCDF4
with netCDF4.Dataset('runs/units/fetch/predictors/ua@850.nc', 'a') as f: f['ua'].units = 'm'"
expect 3 "ua@850.nc: variable 'ua': its units are 'm', not 'km h-1' as runs/units/fetch/manifest.json records it: the file was changed after the fetch" \
  ds predict --set predict.predictors=runs/units/fetch
$py - <<'PY'
import json
p = "runs/units/fetch/manifest.json"
m = json.load(open(p))
for e in m["predictors"]:
    if e["name"] == "ua@850": e["units"] = "m"
json.dump(m, open(p, "w"))
PY
expect 3 "ua@850.nc: variable 'ua' (predictor ua@850): in 'm', but the model was trained on it in 'm s-1', which no unit conversion turns it into" \
  ds predict --set predict.predictors=runs/units/fetch
# A store written before stores recorded their predictors' units: nothing to check against, said.
rm -rf runs/oldstore && mkdir -p runs/oldstore/preprocess runs/oldstore/train
cp runs/demo/preprocess/store.h5 runs/oldstore/preprocess/ && cp runs/demo/train/checkpoint_best.h5 runs/oldstore/train/
$py -c "
import h5py
with h5py.File('runs/oldstore/preprocess/store.h5', 'r+') as f: del f.attrs['channel_units']; del f.attrs['metadata_sha256']"
expect 0 "runs/oldstore/preprocess/store.h5 does not record the units of its predictors (written by an earlier version): the units of the new predictors in runs/same/fetch are not checked" \
  ds predict --set run.dir=runs/oldstore --set predict.predictors=runs/same/fetch
# A store whose attributes outside the identity were edited (a predictor's units Pa made hPa
# predicted a GCM run 79 degC off, the regridding made nearest 0.5 degC off, both exit 0): their
# checksum metadata_sha256 refuses it, exit 3.
for edit in "f.attrs['channel_units'] = np.bytes_(bytes(f.attrs['channel_units']).replace(b'm2 s-2', b'km2 s-2'))" \
            "f.attrs['regrid'] = np.bytes_(b'nearest')"; do
  cp runs/demo/preprocess/store.h5 runs/oldstore/preprocess/store.h5
  $py -c "
import h5py, numpy as np
with h5py.File('runs/oldstore/preprocess/store.h5', 'r+') as f: $edit"
  expect 3 "runs/oldstore/preprocess/store.h5: its attributes (channel_units, regrid, standardize, wet_threshold, calendar and the rest) do not match their checksum metadata_sha256: the store was edited or damaged" \
    ds predict --set run.dir=runs/oldstore --set predict.predictors=runs/same/fetch
done

echo "== 7. a prediction older than its checkpoint"
# Trained again into the same folder (another seed): the prediction of the first model must not be
# scored as the second's; predicted again, it is.
# Trained again the same way, it is the same model (HDF5 keeps no object timestamps; the file
# differs in the command line it records, not in its model_sha256): the prediction is still its
# own and scores.
sum_before=$(sha256sum runs/demo/train/checkpoint_best.h5)
ds train --set run.log_level=info 2>/dev/null
[[ $(sha256sum runs/demo/train/checkpoint_best.h5) != "$sum_before" ]] || { echo "FAIL: the retrained checkpoint's bytes did not change (its config record)"; exit 1; }
expect 0 "wrote runs/demo/evaluate/scores.json" ds evaluate
ds train --set train.seed=7 2>/dev/null
expect 3 "as it was before it was rewritten" ds evaluate
# A config that names another model or loss than the checkpoint's (edited or --set after the
# training) changes nothing in predict: said, naming where it came from.
expect 0 "predict uses the model of runs/demo/train/checkpoint_best.h5 as it was trained: train.loss gaussian (--set train.loss=gaussian), the checkpoint's bernoulli_gamma; the config's values change nothing here" \
  ds predict --set train.loss=gaussian
# A rerun's outputs replace the earlier ones under their names: said.
expect 0 "replacing the earlier prediction)" ds predict
expect 0 "maps and summary.png (replacing the earlier evaluation's)" ds evaluate

echo "faults_provenance: ok"
