#!/usr/bin/env bash
# The scaling model (downscale train --predict-scaling, docs/scaling.md) against a measured
# 2-rank run on this machine's CPU:
#   1. bench_allreduce_bw under `mpirun -np 2`: MPI's allreduce latency and busbw (shared memory);
#   2. bench_train_step --profile-layers: one rank's layer profile (THREADS threads, as each rank);
#   3. the model with that profile and that link: its 2-rank row;
#   4. bench_train_ddp under `mpirun -np 2`: the measured step (and the step without allreduce).
# Prints predicted vs measured. Usage (from the repository root, after a build):
#   bench/scaling_check.sh [BUILD_DIR]     env: GRID=16x24 BATCH=4 BUCKET_MB=1 THREADS=1 STEPS=8
set -euo pipefail
build=${1:-build}
grid=${GRID:-16x24}
batch=${BATCH:-4}
bucket=${BUCKET_MB:-1}
threads=${THREADS:-1}
steps=${STEPS:-8}
command -v mpirun >/dev/null || { echo "scaling_check.sh: needs mpirun (openmpi-bin)" >&2; exit 2; }
for b in pipeline/downscale bench/bench_train_step bench/bench_train_ddp bench/bench_allreduce_bw; do
  [[ -x $build/$b ]] || { echo "scaling_check.sh: $build/$b is not built" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpi=(mpirun -np 2 --bind-to none --oversubscribe)
[[ $(id -u) == 0 ]] && mpi+=(--allow-run-as-root)
key() { sed -n "s/^$1 //p" "$2" | head -1; }

timeout 300 "${mpi[@]}" "$build/bench/bench_allreduce_bw" --mb "$bucket" --reps 20 >"$work/bw"
lat=$(key latency_us "$work/bw")
bw=$(key busbw_gbs "$work/bw")
echo "link: MPI allreduce of $bucket MB on 2 ranks: latency $lat us, busbw $bw GB/s (measured now)"

timeout 300 "$build/bench/bench_train_step" --profile-layers --device cpu --threads "$threads" --grid "$grid" \
  --batch "$batch" --steps "$steps" --warmup 2 --out "$work/profile.json" >/dev/null 2>"$work/profile.log"
cat "$work/profile.log"

# The model needs a config only for train.allreduce_bucket_mb.
timeout 120 "$build/pipeline/downscale" train --config configs/demo.yaml --set "train.allreduce_bucket_mb=$bucket" \
  --predict-scaling --profile "$work/profile.json" --busbw "$bw" --latency-us "$lat" --out "$work/model.json" \
  >"$work/model.txt"
read -r pred_step pred_compute pred_exposed pred_comm < <(/usr/bin/python3 -c "
import json,sys; r=[r for r in json.load(open('$work/model.json'))['rows'] if r['ranks']==2 and r['nodes']==1][0]
print(r['step_s'], r['compute_s'], r['exposed_s'], r['allreduce_s'])")

timeout 600 "${mpi[@]}" "$build/bench/bench_train_ddp" --threads "$threads" --grid "$grid" --batch "$batch" \
  --bucket-mb "$bucket" --steps "$steps" --warmup 2 --nosync-steps "$steps" >"$work/ddp"
meas_step=$(key step_s "$work/ddp")
meas_nosync=$(key step_nosync_s "$work/ddp")
echo "bench_train_ddp: $(key buckets "$work/ddp"); wait after backward $(key wait_s "$work/ddp") s; buckets done" \
  "before backward ended: $(key buckets_done_in_backward "$work/ddp")"

/usr/bin/python3 - "$pred_step" "$pred_compute" "$pred_exposed" "$meas_step" "$meas_nosync" "$pred_comm" "$grid" "$batch" "$bucket" <<'PY'
import sys
ps, pc, pe, ms, mn, comm = map(float, sys.argv[1:7])
grid, batch, bucket = sys.argv[7:10]
print(f"MNN {grid}, batch {batch} per rank, {bucket} MB buckets, 2 ranks (CPU, MPI shared memory)")
print(f"{'':28s} {'predicted':>10s} {'measured':>10s} {'ratio':>7s}")
print(f"{'compute (step, no allreduce)':28s} {pc:10.4f} {mn:10.4f} {mn/pc:7.2f}")
print(f"{'step':28s} {ps:10.4f} {ms:10.4f} {ms/ps:7.2f}")
print(f"{'exposed communication':28s} {pe:10.4f} {ms-mn:10.4f}")
print(f"model with the measured compute: step {mn + pe:.4f} s vs {ms:.4f} s measured ({ms/(mn+pe):.2f}x); "
      f"with no overlap at all {mn + comm:.4f} s")
PY
