#!/usr/bin/env bash
# MNN training-step and forward throughput: downscale against PyTorch on the same architecture,
# batch, weights, data and device, in one invocation. The runs alternate for ROUNDS rounds so
# machine noise hits all alike (round 1 runs ours first, as it writes what the peers load; each
# later round starts one further along ours, NCHW, channels_last[, torch.compile]); each round
# reports the median of STEPS timed steps after WARMUP untimed ones, and the table shows the
# median over rounds.
#
#   bench/train_step.sh [BUILD_DIR]      (default: build)
#   env: BATCH=4 THREADS=2 STEPS=3 WARMUP=1 ROUNDS=3 DEVICE=cpu (or cuda) PY=/usr/bin/python3
#        GRID=30x53 (the input grid HxW: 30x53 is North America; the PyTorch peer takes the shapes
#        from the dump; smaller grids for quick runs, e.g. scripts/gpu_check.sh's rehearsal)
#        MATH=tf32 (or fp32: both peers in plain FP32 on a GPU; the CPU is FP32 either way; bf16 or
#        fp16: ours with train.precision bf16/fp16, PyTorch under torch.autocast(dtype), fp16 with
#        GradScaler on both sides)
#        COMPILE=auto (a torch.compile peer when the PyTorch has it; 0 to skip, 1 to insist)
# PyTorch runs in both layouts (NCHW, channels_last) and, on a GPU, with cudnn.benchmark and TF32;
# the ratio is taken against the fastest eager configuration, and against torch.compile when run.
# Needs the built bench_train_step and PyTorch (Debian's python3-torch here; bench/README.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
BATCH=${BATCH:-4} THREADS=${THREADS:-2} STEPS=${STEPS:-3} WARMUP=${WARMUP:-1} ROUNDS=${ROUNDS:-3}
DEVICE=${DEVICE:-cpu} COMPILE=${COMPILE:-auto} MATH=${MATH:-tf32} GRID=${GRID:-30x53}
ours=$build/bench/bench_train_step
[[ -x $ours ]] || ours=$build/bin/bench_train_step  # the bundle's layout (scripts/bundle.sh)
py=${PY:-/usr/bin/python3}  # Debian's interpreter: the one python3-torch belongs to
[[ -x $ours ]] || { echo "train_step.sh: bench_train_step not built in $build (cmake --build $build --target bench_train_step)" >&2; exit 2; }
$py -c 'import torch' 2>/dev/null || { echo "train_step.sh: $py has no torch (apt-get install python3-torch)" >&2; exit 2; }
has_compile=$($py -c 'import torch; print(int(hasattr(torch, "compile")))')
case $COMPILE in
  auto) COMPILE=$has_compile ;;
  1) [[ $has_compile == 1 ]] || { echo "train_step.sh: COMPILE=1 but $py's torch has no torch.compile" >&2; exit 2; } ;;
esac

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--threads "$THREADS" --steps "$STEPS" --warmup "$WARMUP" --device "$DEVICE")
peers=(nchw cl)
source "$here/peer.sh"  # the peer's fastest allocator setting; agrees
tmath=(--math "$MATH")
[[ $COMPILE == 1 ]] && peers+=(compiled)
run_side() {  # ours | nchw | cl | compiled: that side's run of round r
  case $1 in
    # Round 1 writes the weights and batch that the PyTorch peers load.
    ours) "$ours" "${common[@]}" --math "$MATH" --batch "$BATCH" --grid "$GRID" $([[ $r == 1 ]] && echo --dump "$work/dump.bin") > "$work/ours.$r" ;;
    # NCHW is PyTorch's default layout, channels_last (NHWC) its fast one for oneDNN and for
    # cuDNN's tensor cores; torch.compile (on channels_last) is the second peer where available.
    nchw) $py "$here/train_step_torch.py" "${common[@]}" ${tmath[@]+"${tmath[@]}"} --layout nchw --load "$work/dump.bin" > "$work/nchw.$r" ;;
    cl) $py "$here/train_step_torch.py" "${common[@]}" ${tmath[@]+"${tmath[@]}"} --layout channels_last --load "$work/dump.bin" > "$work/cl.$r" ;;
    compiled) $py "$here/train_step_torch.py" "${common[@]}" ${tmath[@]+"${tmath[@]}"} --layout channels_last --compile --load "$work/dump.bin" > "$work/compiled.$r" ;;
  esac
}
sides=(ours "${peers[@]}")
for r in $(seq 1 "$ROUNDS"); do
  # Round r starts r - 1 places along the list, so each side takes each place in turn; round 1
  # starts with ours (the dump).
  for ((i = 0; i < ${#sides[@]}; i++)); do run_side "${sides[(r - 1 + i) % ${#sides[@]}]}"; done
  show() { awk '/_samples_per_s/ {printf "%s %s  ", $1, $2}' "$work/$1.$r"; }
  line="round $r/$ROUNDS: ours $(show ours)"
  for p in "${peers[@]}"; do line+="| torch $p $(show "$p")"; done
  echo "$line" >&2
done

# The median over rounds of one key from files f.1 .. f.ROUNDS.
med() { cat "$work/$1".* | awk -v k="$2" '$1 == k {print $2}' | sort -g |
        awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
get() { awk -v k="$2" '$1 == k {print $2; exit}' "$work/$1.1"; }
max() { awk -v a="$1" -v b="$2" 'BEGIN {print (a > b) ? a : b}'; }

gf=$(get ours gflop_forward_per_sample) gt=$(get ours gflop_train_per_sample)
row() {  # name train forward
  awk -v n="$1" -v t="$2" -v f="$3" -v gt="$gt" -v gf="$gf" \
    'BEGIN {printf "%-24s %16.3f %9.1f %18.3f %9.1f\n", n, t, t * gt, f, f * gf}'
}
ratio() {  # name ours_t peer_t ours_f peer_f
  awk -v n="$1" -v a="$2" -v b="$3" -v c="$4" -v d="$5" 'BEGIN {printf "%-24s %15.2fx %9s %17.2fx\n", n, a / b, "", c / d}'
}
ot=$(med ours train_samples_per_s) of=$(med ours forward_samples_per_s)
nt=$(med nchw train_samples_per_s) nf=$(med nchw forward_samples_per_s)
ct=$(med cl train_samples_per_s) cf=$(med cl forward_samples_per_s)
tt=$(max "$nt" "$ct") tf=$(max "$nf" "$cf")  # the peer per measure: the faster eager layout
echo
echo "MNN, input 20x$GRID -> 3x$((4 * ${GRID%x*} - 3))x$((4 * ${GRID#*x} - 3)), batch $BATCH, device $DEVICE, $THREADS threads, $(lscpu | sed -n 's/^Model name: *//p')"
echo "ours:  $(sed -n 's/^backend //p' "$work/ours.1")"
echo "peer:  $(sed -n 's/^backend //p' "$work/cl.1" | sed 's/, layout [a-z_]*//')"
echo "GFLOP per sample (convolutions): forward $gf, training step $gt"
printf "%-24s %16s %9s %18s %9s\n" "median of $ROUNDS rounds" "train samples/s" "GFLOP/s" "forward samples/s" "GFLOP/s"
row "downscale" "$ot" "$of"
row "PyTorch NCHW" "$nt" "$nf"
row "PyTorch channels_last" "$ct" "$cf"
ratio "ratio ours/fastest eager" "$ot" "$tt" "$of" "$tf"
if [[ $COMPILE == 1 ]]; then
  pt=$(med compiled train_samples_per_s) pf=$(med compiled forward_samples_per_s)
  row "PyTorch torch.compile" "$pt" "$pf"
  ratio "ratio ours/compiled" "$ot" "$pt" "$of" "$pf"
else
  echo "(no torch.compile peer: $py's torch $($py -c 'import torch; print(torch.__version__)') has none, or COMPILE=0)"
fi
echo "first loss on the same weights and batch: ours $(get ours loss0), PyTorch NCHW $(get nchw loss0), channels_last $(get cl loss0)$([[ $COMPILE == 1 ]] && echo ", torch.compile $(get compiled loss0)")"
# Both sides must have computed the same thing: the first loss on the same weights and batch
# agrees to the rounding of the maths measured (FP32 on the CPU: ~1e-7 seen), or the ratio means
# nothing and the benchmark fails: every peer that ran, torch.compile's too.
tol=1e-4
case $MATH in tf32) [[ $DEVICE == cpu ]] || tol=1e-2 ;; bf16 | fp16) tol=5e-2 ;; esac
for p in "${peers[@]}"; do
  agrees "$(get ours loss0)" "$(get $p loss0)" "$tol" ||
    { echo "train_step.sh: the first losses differ beyond $tol (ours $(get ours loss0), PyTorch $p $(get $p loss0)): the two sides do not compute the same step" >&2; exit 1; }
done
# Other work on the machine slows every peer, not always alike: the load shows whether to rerun.
echo "load average (1, 5, 15 min): $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end, $(nproc) cores"
