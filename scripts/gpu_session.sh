#!/usr/bin/env bash
# The next GPU session's prepared device calls (docs/gpu.md, "The next GPU session"), kept here
# because the device tool takes a command of at most 2,000 characters and call 1 is longer.
# On the GPU machine, from the checkout the device tool copies (carry [".gpu"]: the bundle made by
# `scripts/bundle.sh --fast build .gpu`), with $OUT the folder whose files come back:
#
#   bash scripts/gpu_session.sh call1    # timeout_s 470: the never-run paths' tests, device-check
#                                        # rows, the variants table, profile and two e2e runs
#   bash scripts/gpu_session.sh call2    # timeout_s 360: bench/conv_layouts.py's padded columns,
#                                        # then the parity section with the other device-check rows
#
# Each step has its own timeout and budget (ending by the second the plan gives it, counted from
# the script's start), so the files written so far come back even when a step runs long. With
# GPU_CHECK_REHEARSAL=1 on a machine without a GPU the commands run through (the GPU tests fail
# at once with DOWNSCALE_REQUIRE_GPU=1, gpu_check.sh runs its CPU rehearsal): a check of the
# commands themselves, not of the GPU paths.
set -u
call=${1:-}
if [[ $call != call1 && $call != call2 ]]; then
  echo "usage: scripts/gpu_session.sh call1|call2   (with \$OUT set; docs/gpu.md)" >&2
  exit 2
fi
if [[ -z ${OUT:-} || ! -d $OUT ]]; then
  echo "gpu_session.sh: \$OUT must name an existing folder (the device tool sets it)" >&2
  exit 2
fi
r=$PWD
bundle=$(ls "$r"/.gpu/downscale-*.tar.xz 2>/dev/null | head -1)
if [[ -z $bundle ]]; then
  echo "gpu_session.sh: no bundle in $r/.gpu (scripts/bundle.sh --fast build .gpu, then carry .gpu)" >&2
  exit 2
fi
tar xf "$bundle" -C /tmp || exit 1
# The bundle's own folder (named as its archive), not a glob: an earlier bundle unpacked in /tmp
# (a rehearsal, a second call) would make it two folders.
cd "/tmp/$(basename "$bundle" .tar.xz)" || exit 1
export PY=${PY:-python3}

if [[ $call == call1 ]]; then
  # The lines that say which way each never-run path went (graph_lines.txt).
  G="cuDNN graph engine|stays on legacy|graph API not used|refused|weight gradient by|as TF32|in 16 bits|deferred|channels padded|by timing"
  tests=ModelCuda.PaddedInputChannelsMatchCpu:ModelCuda.GraphEnginesMatchCpu:ModelCuda.WeightGradientByGemmMatchesCpu
  tests+=:ModelCuda.Tf32PassesInHalfModesMatchCpu:ModelCuda.LanesGiveTheSameStepAsOneStream
  tests+=:ModelCuda.AdamUpdateManyIsAdamUpdatePerTensor:ModelCuda.UpsampleConvReluForwardBackwardMatchesCpu
  tests+=:ModelCuda.Bf16Fp16UpsampleConvStaysWithinTolerance
  DOWNSCALE_REQUIRE_GPU=1 timeout 120 bin/env.sh bin/test_model --gtest_filter="$tests" > /tmp/g1.txt 2>&1
  echo "rc $?" >> /tmp/g1.txt
  grep -v "^cuda: conv" /tmp/g1.txt | tail -c 25000 > "$OUT/graph_test.txt"
  rows="defaults|TF32 passes|deferred|graph engines, NHWC|numerical notes|channels padded to 8,|by timing"
  DOWNSCALE_REQUIRE_GPU=1 DOWNSCALE_DEVICE_CHECK_ROWS="$rows" timeout 175 bin/env.sh bin/test_train \
    --gtest_filter='DeviceCheckCuda.*' > /tmp/dc.txt 2>&1
  echo "rc $?" >> /tmp/dc.txt
  grep -v "^cuda: conv" /tmp/dc.txt | tail -c 25000 > "$OUT/device_check.txt"
  # Each never-run switch alone against BF16's default, then the combinations that would ship.
  gt=DOWNSCALE_CUDA_GRAPH=timed+DOWNSCALE_CUDA_WGRAD_GEMM=timed+DOWNSCALE_CUDA_TF32_PASSES=timed
  v="default DOWNSCALE_CUDA_PAD_CHANNELS=1 DOWNSCALE_CUDA_PAD_CHANNELS=all DOWNSCALE_CUDA_PAD_CHANNELS=timed"
  v+=" DOWNSCALE_CUDA_PHASE_F2=0"
  v+=" DOWNSCALE_CUDA_GRAPH=timed DOWNSCALE_CUDA_GRAPH=timed+DOWNSCALE_CUDA_GRAPH_NOTES=pytorch"
  v+=" DOWNSCALE_CUDA_WGRAD_GEMM=timed DOWNSCALE_CUDA_TF32_PASSES=timed DOWNSCALE_CUDA_DEFER_WEIGHTS=1"
  v+=" $gt $gt+DOWNSCALE_CUDA_DEFER_WEIGHTS=1 $gt+DOWNSCALE_CUDA_DEFER_WEIGHTS=1+DOWNSCALE_CUDA_PAD_CHANNELS=timed"
  v+=" DOWNSCALE_CUDA_LAYOUT=nchw+DOWNSCALE_CUDA_ACTIVATIONS16=0"
  SECTIONS=variants MATHS=bf16 STEPS=30 WARMUP=5 VARIANTS="$v" BUDGET=$((300 - SECONDS)) STEP_TIMEOUT=90 \
    REPORT="$OUT/v.md" LOGS=/tmp/l1 bash "$r/scripts/gpu_check.sh" . > /dev/null 2>&1
  # The e2e runs the TF32 passes and GEMM alone, then with the graph engines, the deferral and the
  # padded channels (timed), so a failure of those does not hide the first's 200-epoch minutes.
  SECTIONS="profile e2e" PROFILE_MATHS="bf16+tf32p+gemm+graph" \
    E2E_MATHS="bf16+tf32p+gemm bf16+tf32p+gemm+graph+defer+padt" E2E_DOD=true E2E_EPOCHS=5 \
    BUDGET=$((445 - SECONDS)) STEP_TIMEOUT=100 REPORT="$OUT/p.md" LOGS=/tmp/l2 \
    bash "$r/scripts/gpu_check.sh" . > /dev/null 2>&1
  grep -rhE "$G" /tmp/g1.txt /tmp/dc.txt /tmp/l1 /tmp/l2 2>/dev/null | sort | uniq -c | sort -rn | head -150 \
    > "$OUT/graph_lines.txt"
else
  # PyTorch's cuDNN passes with the input channels padded to 8 (as DOWNSCALE_CUDA_PAD_CHANNELS
  # pads them) and with input and output channels padded, beside the unpadded ones.
  timeout 90 "$PY" "$r/bench/conv_layouts.py" --no-gemm --modes "bf16 nhwc,bf16 nhwc8c,bf16 nhwc8" \
    > "$OUT/conv_pad8.txt" 2>&1
  # Exactly the rows call 1 left (DeviceCheck.GpuSessionCallsRunEachRowOnce): "=" for a row whose
  # name is also part of other rows' names.
  rows="hand-written|weight gradients by GEMM|scratch|=16-bit activations|=NHWC 16-bit activations|unfused|everywhere"
  DOWNSCALE_DEVICE_CHECK_ROWS="$rows" SECTIONS=parity BUDGET=$((340 - SECONDS)) STEP_TIMEOUT=200 \
    REPORT="$OUT/parity.md" LOGS=/tmp/l3 bash "$r/scripts/gpu_check.sh" . > /dev/null 2>&1
  for f in parity parity_device_check; do
    [[ -f /tmp/l3/$f ]] && grep -v "^cuda: conv" "/tmp/l3/$f" | tail -c 30000 > "$OUT/$f.txt"
  done
fi
echo "gpu_session.sh $call: $SECONDS s; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
