#!/usr/bin/env bash
# train.precision bf16 on the CPU (oneDNN, avx512_bf16) end to end, with the activations between
# convolutions stored in BF16 (the default there, Net::set_activations16):
#  1. train logs which activations it keeps in bf16, and reaches exactly the weights (the
#     checksum in train_report.json) of the same run with DOWNSCALE_ACTIVATIONS16=0 (FP32
#     activations): rounding a BF16 convolution's input when it is written or when it is read
#     gives the same bits (tests/model/activations16_test.cpp has the argument);
#  2. and differs from the FP32 run (the bf16 path ran);
#  3. predict in bf16 writes finite, plausible downscaled precipitation;
#  4. train.device_check=true checks the bf16 run's first step (and in fp32) against the CPU's
#     FP32 step, and the last batch's and validation's sizes, and says so, without changing the run: its weights are those of run 1's twin
#     without the check (a check that stepped the run's net would change them); under auto, the
#     CPU default, no check runs; predict checks its first batch's forward the same way.
#   usage: train_bf16_cpu.sh <downscale binary> <source dir>   (exit 77: skipped, no avx512_bf16)
set -euo pipefail
bin=$1
src=$2
grep -qw avx512_bf16 /proc/cpuinfo || { echo "skipped: this CPU has no avx512_bf16"; exit 77; }
[[ -z ${ONEDNN_MAX_CPU_ISA:-}${DNNL_MAX_CPU_ISA:-} ]] || { echo "skipped: oneDNN's ISA is capped"; exit 77; }
source "$(dirname "${BASH_SOURCE[0]}")/demo_store.sh"
demo_store "$bin" "$src" act16 act32 fp32
common=("${years[@]}" --set run.threads=2 --set train.epochs=1 --set train.batch_size=16)

echo "== bf16, activations in bf16"
"$bin" train --config configs/demo.yaml "${common[@]}" --set run.dir=runs/act16 --set train.precision=bf16 \
  --set train.device_check=true 2>&1 | tee act16.log
grep -q 'device check passed: a training step on cpu .* in bf16 and in fp32 against the CPU.*(batch of 16)' act16.log ||
  { echo "train.device_check=true did not report its check"; exit 1; }
# 366 training days in batches of 16 end in 14, 365 validation days in 13: each shape checked once.
grep -q 'device check passed: a training step .*(batch of 14)' act16.log &&
  grep -q 'device check passed: an inference forward .*(validation batch of 13)' act16.log ||
  { echo "the last training batch's or validation's shapes were not checked"; exit 1; }
grep -q 'activations of [0-9]* of [0-9]* layers stored in bf16' act16.log ||
  { echo "train did not say it keeps activations in bf16"; exit 1; }
echo "== bf16, activations in fp32"
DOWNSCALE_ACTIVATIONS16=0 "$bin" train --config configs/demo.yaml "${common[@]}" --set run.dir=runs/act32 \
  --set train.precision=bf16 >act32.log 2>&1
! grep -q 'stored in bf16' act32.log || { echo "DOWNSCALE_ACTIVATIONS16=0 still stored activations in bf16"; exit 1; }
! grep -q 'device check' act32.log || { echo "train.device_check auto ran a check on the CPU"; exit 1; }
echo "== fp32"
"$bin" train --config configs/demo.yaml "${common[@]}" --set run.dir=runs/fp32 --set train.precision=fp32 >/dev/null 2>&1
sum() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['weights_checksum'])" "$1"; }
a=$(sum runs/act16/train/train_report.json) b=$(sum runs/act32/train/train_report.json) c=$(sum runs/fp32/train/train_report.json)
echo "weights checksums: bf16 with bf16 activations $a, with fp32 activations $b; fp32 $c"
[[ $a == "$b" ]] || { echo "bf16 activations changed the training result"; exit 1; }
[[ $a != "$c" ]] || { echo "bf16 training equals fp32: the bf16 path did not run"; exit 1; }

echo "== predict in bf16"
"$bin" predict --config configs/demo.yaml "${years[@]}" --set run.dir=runs/act16 --set train.precision=bf16 \
  --set run.threads=2 --set train.device_check=true 2>&1 | tee predict.log | tail -3
grep -q 'device check passed: an inference forward on cpu .* in bf16 and in fp32 against the CPU' predict.log ||
  { echo "predict with train.device_check=true did not report its check"; exit 1; }
out=runs/act16/predict/precipitation.nc
/usr/bin/python3 - "$out" <<'PY'
import sys
import netCDF4
import numpy as np
with netCDF4.Dataset(sys.argv[1]) as ds:
    pr = np.ma.filled(ds.variables["pr"][:].astype(float), np.nan)
    ds_units = ds.variables["pr"].units
land = np.isfinite(pr)
assert land.any(), "no land value"
v = pr[land]
assert (v >= 0).all() and v.max() < (500 if ds_units.startswith("mm") else 500 / 86400), (v.min(), v.max(), ds_units)
print(f"predict bf16: {v.size} land values, mean {v.mean():.3g}, max {v.max():.3g} ({ds_units})")
PY
echo "train_bf16_cpu: OK"
