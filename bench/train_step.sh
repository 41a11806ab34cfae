#!/usr/bin/env bash
# MNN training-step and forward throughput: downscale (oneDNN) against PyTorch on the same
# architecture, batch, weights, data and thread count, in one invocation. The two alternate for
# ROUNDS rounds so machine noise hits both alike; each round reports the median of STEPS timed
# steps after WARMUP untimed ones, and the table shows the median over rounds.
#
#   bench/train_step.sh [BUILD_DIR]      (default: build)
#   env: BATCH=4 THREADS=2 STEPS=3 WARMUP=1 ROUNDS=3
# Needs the built bench_train_step and Debian's python3-torch (bench/README.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
BATCH=${BATCH:-4} THREADS=${THREADS:-2} STEPS=${STEPS:-3} WARMUP=${WARMUP:-1} ROUNDS=${ROUNDS:-3}
ours=$build/bench/bench_train_step
py=/usr/bin/python3  # Debian's interpreter: the one python3-torch belongs to
[[ -x $ours ]] || { echo "train_step.sh: $ours not built (cmake --build $build --target bench_train_step)" >&2; exit 2; }
$py -c 'import torch' 2>/dev/null || { echo "train_step.sh: needs python3-torch (apt-get install python3-torch)" >&2; exit 2; }

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--threads "$THREADS" --steps "$STEPS" --warmup "$WARMUP")
for r in $(seq 1 "$ROUNDS"); do
  # Round 1 writes the weights and batch that the PyTorch peer loads.
  "$ours" "${common[@]}" --batch "$BATCH" $([[ $r == 1 ]] && echo --dump "$work/dump.bin") > "$work/ours.$r"
  # PyTorch in both layouts every round: NCHW is its default, channels_last (NHWC) its fast one
  # for oneDNN; the peer compared against is whichever is faster in this run.
  $py "$here/train_step_torch.py" "${common[@]}" --layout nchw --load "$work/dump.bin" > "$work/nchw.$r"
  $py "$here/train_step_torch.py" "${common[@]}" --layout channels_last --load "$work/dump.bin" > "$work/cl.$r"
  show() { awk '/_samples_per_s/ {printf "%s %s  ", $1, $2}' "$work/$1.$r"; }
  echo "round $r/$ROUNDS: ours $(show ours)| torch NCHW $(show nchw)| torch channels_last $(show cl)" >&2
done

# The median over rounds of one key from files f.1 .. f.ROUNDS.
med() { cat "$work/$1".* | awk -v k="$2" '$1 == k {print $2}' | sort -g |
        awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
get() { awk -v k="$2" '$1 == k {print $2; exit}' "$work/$1.1"; }

gf=$(get ours gflop_forward_per_sample) gt=$(get ours gflop_train_per_sample)
ot=$(med ours train_samples_per_s) of=$(med ours forward_samples_per_s)
nt=$(med nchw train_samples_per_s) nf=$(med nchw forward_samples_per_s)
ct=$(med cl train_samples_per_s) cf=$(med cl forward_samples_per_s)
# The peer per measure: the faster layout's median.
tt=$(awk -v a="$nt" -v b="$ct" 'BEGIN {print (a > b) ? a : b}')
tf=$(awk -v a="$nf" -v b="$cf" 'BEGIN {print (a > b) ? a : b}')
echo
echo "MNN, input 20x30x53 -> 3x117x209, batch $BATCH, $THREADS threads, $(lscpu | sed -n 's/^Model name: *//p')"
echo "ours:  $(sed -n 's/^backend //p' "$work/ours.1")"
echo "peer:  $(sed -n 's/^backend //p' "$work/cl.1" | sed 's/, layout .*//'), NCHW and channels_last; ratio against the faster"
echo "GFLOP per sample (convolutions): forward $gf, training step $gt"
awk -v ot="$ot" -v of="$of" -v tt="$tt" -v tf="$tf" -v nt="$nt" -v nf="$nf" -v ct="$ct" -v cf="$cf" -v gf="$gf" -v gt="$gt" -v R="$ROUNDS" 'BEGIN {
  printf "%-22s %16s %9s %18s %9s\n", "median of " R " rounds", "train samples/s", "GFLOP/s", "forward samples/s", "GFLOP/s"
  printf "%-22s %16.3f %9.1f %18.3f %9.1f\n", "downscale (oneDNN)", ot, ot * gt, of, of * gf
  printf "%-22s %16.3f %9.1f %18.3f %9.1f\n", "PyTorch NCHW", nt, nt * gt, nf, nf * gf
  printf "%-22s %16.3f %9.1f %18.3f %9.1f\n", "PyTorch channels_last", ct, ct * gt, cf, cf * gf
  printf "%-22s %16.2fx %9s %17.2fx\n", "ratio ours/fastest", ot / tt, "", of / tf
}'
echo "first loss on the same weights and batch: ours $(get ours loss0), PyTorch NCHW $(get nchw loss0), channels_last $(get cl loss0)"
# Other work on the machine slows both peers, not always alike: the load shows whether to rerun.
echo "load average (1, 5, 15 min): $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end, $(nproc) cores"
