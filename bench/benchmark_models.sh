#!/usr/bin/env bash
# `downscale benchmark` against the same model and batch in PyTorch/torchvision, in one
# invocation (issue 15): ResNet50, ResNet101, InceptionV3 on random images, SGD with momentum,
# softmax cross-entropy, one process, the same threads. The runs alternate for ROUNDS rounds so
# machine noise hits both alike (each round starts one further along ours, NCHW, channels_last[,
# torch.compile]); the table shows the median over rounds of each side's mean img/s (each the
# reference script's mean over NUM_ITERS iterations).
#
#   bench/benchmark_models.sh [BUILD_DIR]      (default: build)
#   env: MODELS="resnet50" BATCH=4 IMAGE=0 (0: 224 ResNet, 299 InceptionV3) THREADS=2
#        WARMUP=2 PER_ITER=3 ITERS=3 ROUNDS=1 DEVICE=cpu (or cuda) PRECISION=tf32 (fp32, bf16, fp16)
#        COMPILE=auto (a torch.compile peer when the PyTorch has it; 0 to skip, 1 to insist)
#        PY=/usr/bin/python3
# PyTorch runs in both layouts (NCHW, channels_last) and, on a GPU, with cudnn.benchmark and TF32
# (as PRECISION says); the ratio is taken against the faster eager layout, and against
# torch.compile when run. As bench/train_step.sh, whose conventions it follows.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
MODELS=${MODELS:-resnet50} BATCH=${BATCH:-4} IMAGE=${IMAGE:-0} THREADS=${THREADS:-2}
WARMUP=${WARMUP:-2} PER_ITER=${PER_ITER:-3} ITERS=${ITERS:-3} ROUNDS=${ROUNDS:-1}
DEVICE=${DEVICE:-cpu} PRECISION=${PRECISION:-tf32} COMPILE=${COMPILE:-auto}
ours=$build/pipeline/downscale
[[ -x $ours ]] || ours=$build/bin/downscale  # the bundle's layout (scripts/bundle.sh)
py=${PY:-/usr/bin/python3}
[[ -x $ours ]] || { echo "benchmark_models.sh: downscale not built in $build" >&2; exit 2; }
$py -c 'import torch, torchvision' 2>/dev/null ||
  { echo "benchmark_models.sh: $py has no torch/torchvision (apt-get install python3-torch python3-torchvision)" >&2; exit 2; }
has_compile=$($py -c 'import torch; print(int(hasattr(torch, "compile")))')
case $COMPILE in
  auto) COMPILE=$has_compile ;;
  1) [[ $has_compile == 1 ]] || { echo "benchmark_models.sh: COMPILE=1 but $py's torch has no torch.compile" >&2; exit 2; } ;;
esac

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
peers=(nchw cl)
source "$here/peer.sh"  # the peer's fastest allocator setting
[[ $COMPILE == 1 ]] && peers+=(compiled)
med() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
run_side() {  # ours | nchw | cl | compiled: that side's run of model m, round r
  case $1 in
    ours) "$ours" benchmark "${common[@]}" --device "$DEVICE" --json "$work/$m.jsonl" > "$work/$m.ours.$r" 2>"$work/$m.ours.err" ||
            { cat "$work/$m.ours.err" >&2; exit 1; } ;;
    nchw) $py "$here/benchmark_torch.py" "${common[@]}" --device "$DEVICE" --layout nchw > "$work/$m.nchw.$r" ;;
    cl) $py "$here/benchmark_torch.py" "${common[@]}" --device "$DEVICE" --layout channels_last > "$work/$m.cl.$r" ;;
    compiled) $py "$here/benchmark_torch.py" "${common[@]}" --device "$DEVICE" --layout channels_last --compile > "$work/$m.compiled.$r" ;;
  esac
}
sides=(ours "${peers[@]}")
for m in $MODELS; do
  common=(--model "$m" --batch-size "$BATCH" --image-size "$IMAGE" --num-warmup-batches "$WARMUP"
          --num-batches-per-iter "$PER_ITER" --num-iters "$ITERS" --threads "$THREADS" --precision "$PRECISION")
  for r in $(seq 1 "$ROUNDS"); do
    # Round r starts r - 1 places along the list, so each side takes each place in turn.
    for ((i = 0; i < ${#sides[@]}; i++)); do run_side "${sides[(r - 1 + i) % ${#sides[@]}]}"; done
    # Ours at full precision from its JSON line (the printed lines round to 0.1 as the reference's).
    tail -1 "$work/$m.jsonl" | grep -o '"mean":[-0-9.e+]*' | cut -d: -f2 > "$work/$m.mean.$r"
    # Both sides must run the same net, or the ratio compares nothing: the parameter counts agree
    # within 0.5 % (Keras' convolutions, which ours follows, carry biases torchvision's lack:
    # measured +0.10 % ResNet50, +0.12 % ResNet101, -0.07 % InceptionV3; another depth or width is
    # tens of percent off). Weights and images differ (both random): the cost does not depend on them.
    po=$(tail -1 "$work/$m.jsonl" | grep -o '"parameters":[0-9]*' | cut -d: -f2 || true)
    pt=$(awk '$1 == "parameters" {print $2}' "$work/$m.cl.$r")
    [[ -n $po && -n $pt ]] || { echo "benchmark_models.sh: $m: a side printed no parameter count (ours '$po', torchvision '$pt')" >&2; exit 1; }
    awk -v a="$po" -v b="$pt" 'BEGIN {d = (a - b) / b; exit !(b > 0 && d < 0.005 && d > -0.005)}' ||
      { echo "benchmark_models.sh: $m: ours has $po parameters, torchvision $pt: not the same net" >&2; exit 1; }
    line="$m round $r/$ROUNDS: ours $(cat "$work/$m.mean.$r")"
    for p in "${peers[@]}"; do line+=" | torch $p $(awk '$1 == "img_per_s" {print $2}' "$work/$m.$p.$r")"; done
    echo "$line" >&2
  done
done

echo
echo "downscale benchmark against PyTorch: batch $BATCH, device $DEVICE, precision $PRECISION, $THREADS threads, $(lscpu | sed -n 's/^Model name: *//p')"
echo "ours:  $(sed -n 's/^Device: //p' "$work/$(set -- $MODELS; echo "$1").ours.1")"
echo "peer:  $(sed -n 's/^backend //p' "$work/$(set -- $MODELS; echo "$1").cl.1" | sed 's/, layout [a-z_]*//')"
printf "%-14s %6s %12s %12s %12s %12s %10s %10s\n" model image "ours img/s" "torch NCHW" "torch CL" "torch comp." "ours/eager" "ours/comp."
for m in $MODELS; do
  o=$(cat "$work/$m.mean".* | med)
  n=$(cat "$work/$m.nchw".* | awk '$1 == "img_per_s" {print $2}' | med)
  c=$(cat "$work/$m.cl".* | awk '$1 == "img_per_s" {print $2}' | med)
  p=-; [[ $COMPILE == 1 ]] && p=$(cat "$work/$m.compiled".* | awk '$1 == "img_per_s" {print $2}' | med)
  size=$(sed -n 's/^Image size: \([0-9]*\)x.*/\1/p' "$work/$m.ours.1")
  awk -v m="$m" -v s="$size" -v o="$o" -v n="$n" -v c="$c" -v p="$p" 'BEGIN {
    e = (n > c) ? n : c
    printf "%-14s %6s %12.3f %12.3f %12.3f %12s %9.2fx %10s\n", m, s, o, n, c, p, o / e, (p == "-") ? "-" : sprintf("%.2fx", o / p) }'
done
[[ $COMPILE == 1 ]] || echo "(no torch.compile peer: $py's torch $($py -c 'import torch; print(torch.__version__)') has none, or COMPILE=0)"
echo "load average (1, 5, 15 min): $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end, $(nproc) cores"
