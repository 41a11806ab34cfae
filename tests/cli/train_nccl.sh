#!/usr/bin/env bash
# Training through NCCL on one GPU (run.communicator nccl, train/device_communicator.h): one rank
# still goes through the NCCL communicator, device-memory gradient buckets and the NCCL
# broadcast/average of weights and batch-norm buffers, so this exercises the plugin's NCCL path.
#  1. nccl, fp32 on the wire: summing one rank is exact and the buckets are device-to-device
#     copies, so the weights equal the plain GPU run's (run.communicator mpi, no collectives) bit
#     for bit when the GPU run is itself deterministic (two plain runs agree); if cuDNN's chosen
#     algorithms are not (atomics), within 4x the two plain runs' own spread (+1e-6).
#     (train_report.json's weights_checksum; the spread through h5py when it is installed, else
#     through the final losses).
#  2. nccl, bf16 on the wire (packing kernels, ncclBfloat16): finite, the final training loss
#     within 2 % of the plain run's (bf16 keeps 8 bits: ~0.4 % per gradient element).
#  3. run.communicator nccl on the CPU backend: exit 2 naming the key.
# Exit 77 (skipped) without a GPU, unless DOWNSCALE_REQUIRE_GPU=1 (scripts/gpu_check.sh), where a
# missing GPU is a failure. NCCL comes from LD_LIBRARY_PATH (bin/env.sh adds PyTorch's
# site-packages/nvidia/nccl/lib).
#   usage: train_nccl.sh <downscale binary> <source dir>
set -euo pipefail
bin=$1
src=$2
source "$(dirname "${BASH_SOURCE[0]}")/require_gpu.sh"

source "$(dirname "${BASH_SOURCE[0]}")/demo_store.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false
export OMPI_MCA_ess_singleton_isolated=1
runs=(plain1 plain2 nccl bf16)
demo_store "$bin" "$src" "${runs[@]}" cpu
# Small buckets: several allreduces started during backward.
common=("${years[@]}" --set run.device=cuda --set train.precision=fp32 --set train.epochs=2 --set train.batch_size=16
        --set train.allreduce_bucket_mb=0.004)
train() {  # run, then --set options
  local run=$1; shift
  echo "== $run: $*"
  "$bin" train --config configs/demo.yaml "${common[@]}" --set run.dir=runs/$run "$@" 2>&1 | tee $run.log
}
train plain1 --set run.communicator=mpi
train plain2 --set run.communicator=mpi
train nccl --set run.communicator=nccl
grep -q 'communicator nccl, buckets in device memory' nccl.log || { echo "nccl run did not use NCCL device buckets"; exit 1; }
train bf16 --set run.communicator=nccl --set train.allreduce_dtype=bf16
grep -q 'bf16 on the wire, communicator nccl' bf16.log || { echo "bf16 run did not reduce in bf16 over NCCL"; exit 1; }

# Any python3 with numpy (h5py optional: only to measure a non-deterministic GPU's spread).
py=
for p in ${PY:-} /usr/bin/python3 python3; do "$p" -c 'import numpy' 2>/dev/null && { py=$p; break; }; done
[[ -n $py ]] || { echo "no python3 with numpy"; exit 1; }
"$py" - <<'PY'
import csv, json, sys
import numpy as np
def report(run):
    return json.load(open(f"runs/{run}/train/train_report.json"))
def loss(run):
    return report(run)["final_train_loss"]
ok = True
c1, c2, cn = (report(r)["weights_checksum"] for r in ("plain1", "plain2", "nccl"))
print(f"weights checksums: plain {c1} {c2}, nccl {cn}")
if c1 == c2:
    print("plain GPU runs agree bit for bit: the nccl run must too:", "OK" if cn == c1 else "DIFFERENT")
    ok &= cn == c1
else:
    try:
        import h5py
        def weights(run):
            f = h5py.File(f"runs/{run}/train/checkpoint_last.h5", "r")
            out = {}
            f["weights"].visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
            return out
        def diff(a, b):
            return max(float(np.max(np.abs(a[k] - b[k])) / (np.max(np.abs(a[k])) + 1e-12)) for k in a)
        p1, p2, nc = (weights(r) for r in ("plain1", "plain2", "nccl"))
        spread, d = diff(p1, p2), diff(p1, nc)
        print(f"plain GPU runs differ by {spread:.2e} (non-deterministic cuDNN algorithms); nccl vs plain {d:.2e} "
              f"(allowed {4 * spread + 1e-6:.2e})")
        ok &= d <= 4 * spread + 1e-6
    except ImportError:
        rel = abs(loss("nccl") - loss("plain1")) / abs(loss("plain1"))
        spread = abs(loss("plain2") - loss("plain1")) / abs(loss("plain1"))
        print(f"no h5py: final loss nccl vs plain {rel:.2e}, plain vs plain {spread:.2e} (allowed 4x + 1e-6)")
        ok &= rel <= 4 * spread + 1e-6
lp, lb = loss("plain1"), loss("bf16")
print(f"final train loss: plain {lp:.6f}, nccl {loss('nccl'):.6f}, nccl bf16 {lb:.6f} "
      f"(relative {abs(lb - lp) / abs(lp):.2e}, allowed 2e-2)")
ok &= bool(np.isfinite(lb)) and abs(lb - lp) <= 2e-2 * abs(lp)
sys.exit(0 if ok else 1)
PY

echo "== run.communicator nccl on the CPU: exit 2"
set +e
"$bin" train --config configs/demo.yaml "${years[@]}" --set run.dir=runs/cpu --set run.device=cpu \
  --set run.communicator=nccl --set train.epochs=1 > cpu.log 2>&1
rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q "run.communicator' is nccl" cpu.log || { echo "expected exit 2 naming run.communicator, got $rc:"; cat cpu.log; exit 1; }
echo "train_nccl: OK"
