#!/usr/bin/env python3
"""What cuDNN gives MNN's convolutions in each precision and layout, pass by pass (PyTorch's
cuDNN path, cudnn.benchmark on): TF32 and BF16, NCHW and NHWC (channels_last). The question it
answers (docs/gpu.md, "Next on a GPU" item 3): how much faster are 16-bit convolutions whose
tensors are already 16-bit NHWC, as they would be with 16-bit NHWC activations between layers,
than today's TF32 NCHW ones, layer by layer? PyTorch's own MNN step runs 1.57x faster in BF16
channels_last than in TF32 on an H100; ours 1.06x. The shapes are MNN's at the North America
grid, each convolution as the backend runs it: the five branches at 30 x 53, up1's polyphase
small convolution (50 -> 4 x 50, 3x3 on 30 x 53), up1_conv2/3 at 60 x 106, up2's polyphase
small convolution (100 -> 4 x 132, 5x5 on 60 x 106) and the 4x4 'valid' head at 120 x 212.
Even kernels get Keras' padding (the extra row and column at the bottom/right) by padding the
input once, outside the clock.

The two "gemm" columns (since 2026-11-24) answer the other question for the larger convolutions
(60 x 106 and the polyphase ones): what would each pass take as im2col + batched GEMM on cuBLAS,
NCHW, the way the backend's weight gradient by GEMM already runs (model/kernels/wgrad_gemm.h)?
Forward: unfold x, then W (O x K) times each sample's columns; backward data: W^T times dY, then
fold (col2im, summing the overlapping windows); backward filter: unfold x, dY times the columns'
transpose per sample, summed over the batch. PyTorch's unfold/fold stand in for our im2col
kernels. If these beat cuDNN's NCHW passes of up2_conv1 (11.5 ms of the TF32 step on an H100,
forward 2.83, data 2.65, filter 6.02), the forward and data passes by GEMM are worth building.

The "nhwc8" columns (since 2026-11-30) answer a third: does cuDNN run a 16-bit NHWC convolution
faster when its channel counts are multiples of 8 (16 bytes a pixel in BF16), the alignment its
tensor-core kernels load at? MNN's are not (20, 25, 50, 75, 100, 132 in; 10, 25, 50, 75, 100, 200,
528, 3 out). On the H200 (2026-11-28/29) up2_conv1's 100 -> 528 BF16 passes ran at about 290
TFLOP/s, about 29 % of the dense BF16 peak, where its TF32 ones (400 bytes a pixel, aligned) reach
about 45 % of theirs; its BF16 backward data (2.63 ms) was slower than TF32's (2.18). These columns
pad C and O with zero channels up to the next multiple of 8 (3 % more multiply-adds for up2_conv1),
outside the clock: the same convolution in every unpadded channel. If "bf16 nhwc8" beats "bf16
nhwc" on a shape by more than the padding costs, the backend's 16-bit NHWC activations are worth a
channel stride rounded up to 8. "bf16 nhwc8c" pads the input channels only, as the backend's
DOWNSCALE_CUDA_PAD_CHANNELS=all does (docs/gpu.md, "Input channels padded to 8").

  python3 bench/conv_layouts.py [--batch 32] [--device cuda] [--reps 10] [--no-gemm]
                                [--only NAME] [--modes "bf16 nhwc,bf16 nhwc8"]
prints one line per convolution and pass (ms, median of --reps after warm-up) and the totals,
with each mode's total against TF32 NCHW (the gemm columns: totals over their shapes only). On a
CPU (--device cpu) it runs as a smoke test at whatever batch it is given; there TF32 means FP32.
"""
import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F

# (name, in channels, out channels, kernel, H, W, padding: 'same' or 'valid')
SHAPES = [(f"branch{k}_conv{i + 1}", ci, co, k, 30, 53, "same")
          for k in (2, 3, 5, 7, 9) for i, (ci, co) in enumerate([(20, 50), (50, 25), (25, 10)])]
SHAPES += [
    ("up1_conv1 (polyphase 50->200 3x3)", 50, 200, 3, 30, 53, "same"),
    ("up1_conv2", 50, 75, 5, 60, 106, "same"),
    ("up1_conv3", 75, 100, 5, 60, 106, "same"),
    ("up2_conv1 (polyphase 100->528 5x5)", 100, 528, 5, 60, 106, "same"),
    ("head (132->3 4x4 valid)", 132, 3, 4, 120, 212, "valid"),
]
MODES = [("tf32", "nchw"), ("tf32", "nhwc"), ("bf16", "nchw"), ("bf16", "nhwc"), ("bf16", "nhwc8c"), ("bf16", "nhwc8")]
GEMM_MODES = [("tf32", "gemm"), ("bf16", "gemm")]


def has_gemm_column(shape):
    """The convolutions where a GEMM form could matter: the 60 x 106 ones and the polyphase ones."""
    name, _, _, _, h, _, _ = shape
    return h >= 60 and "head" not in name or "polyphase" in name


def round_up8(c):
    """The channel count padded with zero channels to the next multiple of 8 (the nhwc8 columns)."""
    return (c + 7) // 8 * 8


def keras_pad(k):
    """Keras 'same' for stride 1: k - 1 in all, the smaller half before."""
    before = (k - 1) // 2
    return before, k - 1 - before


def clock(fn, device, reps):
    fn()  # warm-up: cudnn.benchmark chooses its algorithm here
    fn()
    times = []
    for _ in range(reps):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def gemm_passes(shape, batch, math, device, reps):
    """im2col + batched GEMM (cuBLAS through torch.matmul), NCHW, each pass as the docstring says."""
    _, ci, co, k, h, w, padding = shape
    dtype = torch.bfloat16 if math == "bf16" else torch.float32
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(batch, ci, h, w, generator=gen)
    if padding == "same":
        top, bottom = keras_pad(k)
        x = F.pad(x, (top, bottom, top, bottom))
    x = x.to(device=device, dtype=dtype).contiguous()
    hp, wp = x.shape[2], x.shape[3]
    oh, ow = hp - k + 1, wp - k + 1
    wt = (torch.randn(co, ci * k * k, generator=gen) * 0.05).to(device=device, dtype=dtype)
    dy = torch.randn(batch, co, oh * ow, generator=gen).to(device=device, dtype=dtype)

    def forward():
        return torch.matmul(wt, F.unfold(x, k))  # (O x K) (N, K, P) -> (N, O, P)

    def backward_data():
        return F.fold(torch.matmul(wt.t(), dy), (hp, wp), k)  # (K x O) (N, O, P), then col2im

    def backward_filter():
        return torch.matmul(dy, F.unfold(x, k).transpose(1, 2)).sum(0)  # per sample (O x K), summed

    return {
        "forward": clock(forward, device, reps),
        "backward data": clock(backward_data, device, reps),
        "backward filter": clock(backward_filter, device, reps),
    }


def passes(shape, batch, math, layout, device, reps):
    if layout == "gemm":
        return gemm_passes(shape, batch, math, device, reps)
    _, ci, co, k, h, w, padding = shape
    if layout == "nhwc8":  # zero channels up to multiples of 8, then as nhwc
        ci, co, layout = round_up8(ci), round_up8(co), "nhwc"
    elif layout == "nhwc8c":  # the input channels only, as DOWNSCALE_CUDA_PAD_CHANNELS pads them
        ci, layout = round_up8(ci), "nhwc"
    dtype = torch.bfloat16 if math == "bf16" else torch.float32
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(batch, ci, h, w, generator=gen)
    if padding == "same":
        top, bottom = keras_pad(k)
        x = F.pad(x, (top, bottom, top, bottom))  # (left, right, top, bottom): square kernels
    x = x.to(device=device, dtype=dtype).contiguous(memory_format=fmt)
    wt = (torch.randn(co, ci, k, k, generator=gen) * 0.05).to(device=device, dtype=dtype).contiguous(memory_format=fmt)
    y = F.conv2d(x, wt)
    dy = torch.randn(y.shape, generator=gen).to(device=device, dtype=dtype).contiguous(memory_format=fmt)
    conv_backward = torch.ops.aten.convolution_backward

    def backward(mask):
        return conv_backward(dy, x, wt, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, mask)

    return {
        "forward": clock(lambda: F.conv2d(x, wt), device, reps),
        "backward data": clock(lambda: backward([True, False, False]), device, reps),
        "backward filter": clock(lambda: backward([False, True, False]), device, reps),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--only", default="", help="run only the shapes whose name contains this")
    ap.add_argument("--no-gemm", action="store_true", help="leave out the im2col + GEMM columns")
    ap.add_argument("--modes", default="",
                    help="comma-separated columns to run, e.g. 'bf16 nhwc,bf16 nhwc8' (default: all)")
    a = ap.parse_args()
    if a.device == "cuda":
        if not torch.cuda.is_available():
            sys.exit("conv_layouts.py: --device cuda but torch sees no GPU")
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = True
        torch.backends.cuda.matmul.allow_tf32 = True
        print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    else:
        print(f"device: cpu ({torch.get_num_threads()} threads), torch {torch.__version__}: a smoke test, TF32 is FP32")
    print(f"batch {a.batch}, ms per call, median of {a.reps}")
    modes = MODES + ([] if a.no_gemm else GEMM_MODES)
    if a.modes:
        wanted = [m.strip() for m in a.modes.split(",") if m.strip()]
        known = [f"{m} {l}" for m, l in modes]
        unknown = [m for m in wanted if m not in known]
        if unknown:
            sys.exit(f"conv_layouts.py: unknown --modes {', '.join(unknown)} (known: {', '.join(known)})")
        modes = [(m, l) for m, l in modes if f"{m} {l}" in wanted]
    names = [f"{m} {l}" for m, l in modes]
    print(f"{'convolution':38s} {'pass':16s} " + " ".join(f"{n:>10s}" for n in names))
    totals = {n: 0.0 for n in names}
    gemm_totals = {n: 0.0 for n in names}  # over the shapes that have the gemm columns
    for shape in SHAPES:
        if a.only and a.only not in shape[0]:
            continue
        gemm = has_gemm_column(shape)
        res = {f"{m} {l}": passes(shape, a.batch, m, l, a.device, a.reps) for m, l in modes if l != "gemm" or gemm}
        for p in ("forward", "backward data", "backward filter"):
            print(f"{shape[0]:38s} {p:16s} " +
                  " ".join(f"{res[n][p]:10.3f}" if n in res else f"{'-':>10s}" for n in names))
            for n in res:
                if not n.endswith("gemm"):
                    totals[n] += res[n][p]
                if gemm:
                    gemm_totals[n] += res[n][p]
    cudnn = [n for n in names if not n.endswith("gemm")]
    print(f"{'total':38s} {'':16s} " + " ".join(f"{totals[n]:10.3f}" if n in cudnn else f"{'-':>10s}" for n in names))
    base = totals[names[0]]
    print(f"{'against ' + names[0]:38s} {'':16s} " +
          " ".join(f"{base / totals[n]:9.2f}x" if n in cudnn else f"{'-':>10s}" for n in names))
    if len(cudnn) < len(names) and gemm_totals[names[0]] > 0:
        print(f"{'total, shapes with gemm columns':38s} {'':16s} " + " ".join(f"{gemm_totals[n]:10.3f}" for n in names))
        gbase = gemm_totals[names[0]]
        print(f"{'against ' + names[0] + ' there':38s} {'':16s} " + " ".join(f"{gbase / gemm_totals[n]:9.2f}x" for n in names))


if __name__ == "__main__":
    main()
