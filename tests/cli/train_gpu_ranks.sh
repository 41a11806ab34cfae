#!/usr/bin/env bash
# Two ranks on one GPU: what a node gives when it has fewer GPUs than ranks, and the only
# multi-rank GPU run a one-GPU machine allows (scripts/gpu_check.sh, section nccl).
#  1. run.communicator mpi: both ranks take GPU 0 (local rank modulo the GPUs), the sharing is
#     logged as a warning, gradients go through host buckets and MPI, and both ranks end with the
#     same weights (the checksum each logs). At the same global batch (2 ranks x 8 at 1e-3 against
#     1 rank x 16 at 2e-3, no warmup) the final training loss is the one-rank run's within TOL:
#     the same samples and rate, another summation order (train_mpi.sh measures 2.4e-5 of the
#     weights on the CPU); the GPU's cuDNN algorithms add their own run-to-run spread, so TOL is
#     1e-3 of the loss, where a missing average or a wrong shard or rate shows at 1e-2 and above.
#  2. run.communicator nccl: NCCL refuses two ranks of one communicator on one device
#     (ncclInvalidUsage, "Duplicate GPU detected") in the releases we know. The job must then end
#     non-zero within 180 s with ncclCommInitRank named (by at least the first rank to log it:
#     mpirun may end the other first), nothing written: a refusal, never a hang.
#     Should a NCCL accept it, the run is checked as 1 instead (a real two-rank NCCL run). The
#     log says which happened.
# Exit 77 (skipped) without a GPU, unless DOWNSCALE_REQUIRE_GPU=1.
# RANKS_DEVICE=cpu (ctest train_gpu_ranks_cpu): the same script on the CPU, so CI keeps its
# parsing of the logs true between the rare GPU sessions: 1 without the GPU's own lines (the
# sharing warning, the device check), and in 2 the CPU's refusal of nccl (exit 2 naming
# run.communicator) in place of NCCL's.
#   usage: [RANKS_DEVICE=cpu] train_gpu_ranks.sh <downscale binary> <source dir>
set -euo pipefail
bin=$1
src=$2
device=${RANKS_DEVICE:-cuda}
where=$([[ $device == cuda ]] && echo "both on the one GPU" || echo "on the CPU")
if [[ $device == cuda ]]; then
  source "$(dirname "${BASH_SOURCE[0]}")/require_gpu.sh"
  # Both ranks on one GPU on any machine: on a host of several, local rank modulo the GPUs would
  # give each its own.
  visible=${CUDA_VISIBLE_DEVICES:-0}
  export CUDA_VISIBLE_DEVICES=${visible%%,*}
fi
command -v mpirun >/dev/null || { echo "no mpirun on PATH (the bundle's bin/env.sh puts its own there)"; exit 1; }

source "$(dirname "${BASH_SOURCE[0]}")/demo_store.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false
mpi=(mpirun -np 2 --oversubscribe --bind-to none)
demo_store "$bin" "$src" one mpi2 nccl2
common=("${years[@]}" --set run.device=$device --set train.precision=fp32 --set train.epochs=2 --set train.warmup_epochs=0)
two=(--set train.batch_size=8 --set train.learning_rate=1e-3)

echo "== 1 rank x 16 ($device)"
"$bin" train --config configs/demo.yaml "${common[@]}" --set run.dir=runs/one --set train.batch_size=16 \
  --set train.learning_rate=2e-3 > one.log 2>&1 || { tail -20 one.log; exit 1; }

# Both ranks' weights equal, rank 0 alone wrote the report, and the loss matches the one-rank run.
check_two() {  # run log
  local run=$1 log=$2 sums
  grep -q 'rank 1\].*data parallel over 2 ranks' "$log" || { echo "$run: rank 1 did not train"; tail -20 "$log"; return 1; }
  sums=$(grep -o 'final weights checksum [0-9a-f]*' "$log" | sort -u | wc -l || true)
  [[ $(grep -c 'final weights checksum' "$log") -eq 2 && $sums -eq 1 ]] ||
    { echo "$run: the ranks end with different weights:"; grep 'final weights checksum' "$log"; return 1; }
  if [[ $device == cuda ]]; then
    grep -q 'ranks on this node share 1 GPUs' "$log" || { echo "$run: no warning that two ranks share the GPU"; return 1; }
    grep -q 'device check passed' "$log" || { echo "$run: no device check line"; return 1; }
  fi
  RUN=$run python3 - <<'PY'
import json, os
TOL = 1e-3
run = os.environ["RUN"]
one = json.load(open("runs/one/train/train_report.json"))
two = json.load(open(f"runs/{run}/train/train_report.json"))
a, b = one["final_train_loss"], two["final_train_loss"]
rel = abs(a - b) / abs(a)
print(f"{run}: final train loss 1 rank x 16 {a:.6f}, 2 ranks x 8 {b:.6f}: relative {rel:.2e} (tolerance {TOL:g})")
assert two["ranks"] == 2, two["ranks"]
assert rel <= TOL, rel
PY
}

echo "== 2 ranks x 8 ($where), run.communicator mpi"
"${mpi[@]}" "$bin" train --config configs/demo.yaml "${common[@]}" "${two[@]}" --set run.dir=runs/mpi2 \
  --set run.communicator=mpi > mpi2.log 2>&1 || { echo "two ranks through MPI on one GPU failed:"; tail -30 mpi2.log; exit 1; }
check_two mpi2 mpi2.log

echo "== 2 ranks x 8 ($where), run.communicator nccl"
set +e
start=$SECONDS
timeout -k 10 180 "${mpi[@]}" "$bin" train --config configs/demo.yaml "${common[@]}" "${two[@]}" --set run.dir=runs/nccl2 \
  --set run.communicator=nccl > nccl2.log 2>&1
rc=$?
set -e
took=$((SECONDS - start))
if [[ $device == cpu ]]; then
  [[ $rc -eq 2 ]] && grep -q "run.communicator' is nccl" nccl2.log ||
    { echo "expected exit 2 naming run.communicator on the CPU, got $rc:"; tail -20 nccl2.log; exit 1; }
  echo "the CPU refused nccl on two ranks: exit 2 after ${took} s"
elif [[ $rc -eq 0 ]]; then
  echo "NCCL accepted two ranks on one GPU (${took} s): checked as a two-rank run"
  check_two nccl2 nccl2.log
elif [[ $rc -eq 124 || $rc -eq 137 ]]; then
  echo "two ranks through NCCL on one GPU did not end within 180 s (a hang):"; tail -30 nccl2.log; exit 1
else
  n=$(grep -c 'ncclCommInitRank failed on rank' nccl2.log || true)
  echo "NCCL refused two ranks on one GPU: exit $rc after ${took} s; $n rank(s) named ncclCommInitRank:"
  grep -m2 'ncclCommInitRank failed on rank' nccl2.log | cut -c1-300 || true
  [[ $n -ge 1 ]] || { echo "the refusal does not name ncclCommInitRank:"; tail -30 nccl2.log; exit 1; }
  [[ ! -e runs/nccl2/train/checkpoint_last.h5 ]] || { echo "a refused run left a checkpoint"; exit 1; }
fi
echo "train_gpu_ranks: OK"
