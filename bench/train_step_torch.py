#!/usr/bin/python3
"""The PyTorch peer of bench_train_step: the same MNN, loss, optimizer, batch and thread count.

Loads the initial weights and the batch that `bench_train_step --dump` wrote, so its first loss
must equal ours (printed as loss0; bench/train_step.sh shows both). Prints `key value` lines.
Needs Debian's python3-torch (run with /usr/bin/python3).
"""
import argparse
import statistics
import struct
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

EPS = 1e-6  # the Bernoulli-Gamma eps of model/loss.h


def read_dump(path):
    """name -> float32 array, in file order (bench/bench_data.h has the format)."""
    arrays = {}
    with open(path, "rb") as f:
        if f.read(4) != b"DSB1":
            raise SystemExit(f"{path}: not a bench_train_step dump")
        (count,) = struct.unpack("<i", f.read(4))
        for _ in range(count):
            (n,) = struct.unpack("<i", f.read(4))
            name = f.read(n).decode()
            dims = struct.unpack("<4i", f.read(16))
            arrays[name] = np.fromfile(f, dtype="<f4", count=int(np.prod(dims))).reshape(dims)
    return arrays


def keras_same(k):
    """TensorFlow's 'same' for stride 1: k-1 in total, the smaller half before (top/left)."""
    return (k - 1) // 2, k - 1 - (k - 1) // 2


class SameConv(nn.Module):
    """Conv2d with Keras 'same' padding. Odd kernels pad symmetrically inside the conv (PyTorch's
    fastest path); even ones need F.pad for the extra bottom row and right column."""

    def __init__(self, cin, cout, k):
        super().__init__()
        self.before, self.after = keras_same(k)
        symmetric = self.before == self.after
        self.pad = None if symmetric else (self.before, self.after, self.before, self.after)
        self.conv = nn.Conv2d(cin, cout, k, padding=self.before if symmetric else 0)

    def forward(self, x):
        return self.conv(x if self.pad is None else F.pad(x, self.pad))


class MNN(nn.Module):
    """model/models.cpp's build_mnn, layer for layer and in the same parameter order."""

    def __init__(self, cin=20):
        super().__init__()
        self.layers = nn.ModuleDict()
        for k in (2, 3, 5, 7, 9):
            b = f"branch{k}"
            self.layers[b + "_conv1"] = SameConv(cin, 50, k)
            self.layers[b + "_conv2"] = SameConv(50, 25, k)
            self.layers[b + "_conv3"] = SameConv(25, 10, k)
        self.layers["up1_conv1"] = SameConv(50, 50, 5)
        self.layers["up1_conv2"] = SameConv(50, 75, 5)
        self.layers["up1_conv3"] = SameConv(75, 100, 5)
        self.layers["up2_conv1"] = SameConv(100, 132, 8)
        self.layers["head"] = nn.Conv2d(132, 3, 4)  # 'valid'

    def forward(self, x):
        L = self.layers
        branches = []
        for k in (2, 3, 5, 7, 9):
            h = x
            for i in (1, 2, 3):
                h = F.relu(L[f"branch{k}_conv{i}"](h))
            branches.append(h)
        h = F.interpolate(torch.cat(branches, 1), scale_factor=2, mode="nearest")
        for i in (1, 2, 3):
            h = F.relu(L[f"up1_conv{i}"](h))
        h = F.interpolate(h, scale_factor=2, mode="nearest")
        h = F.relu(L["up2_conv1"](h))
        out = L["head"](h)
        return torch.cat([torch.sigmoid(out[:, :1]), out[:, 1:]], 1)

    def load(self, arrays):
        """Copies the dumped weights in; every name and shape must match ours."""
        for name, module in self.layers.items():
            conv = module.conv if isinstance(module, SameConv) else module
            w, b = arrays[name + "/W"], arrays[name + "/b"]
            if tuple(conv.weight.shape) != w.shape or conv.bias.numel() != b.size:
                raise SystemExit(f"{name}: PyTorch {tuple(conv.weight.shape)} vs ours {w.shape}")
            with torch.no_grad():
                conv.weight.copy_(torch.from_numpy(w))
                conv.bias.copy_(torch.from_numpy(b.reshape(-1)))


def bernoulli_gamma_loss(out, y, land, n_land=None):
    """model/loss.h's formula: the mean negative log-likelihood over land points.

    The sum over land divided by their count n_land (land_count: counted once, before the timed
    steps), not a masked_select: its output's size depends on the data, so it waits for the GPU
    every step, and ours reads nothing back inside the timed steps. The same value (the sea's
    terms are zeros in the sum) and the same gradient. Without n_land the count is taken on the
    device, also without a wait."""
    p, a, b = out[:, 0:1], torch.exp(out[:, 1:2]), torch.exp(out[:, 2:3])
    wet = y > 0
    ll_wet = (torch.log(p + EPS) + (a - 1) * torch.log(y + EPS) - a * torch.log(b + EPS)
              - torch.lgamma(a + EPS) - y / (b + EPS))
    ll = torch.where(wet, ll_wet, torch.log(1 - p + EPS))
    land = land.expand_as(ll)
    if n_land is None:
        n_land = land.sum()
    return -(torch.where(land, ll, torch.zeros_like(ll)).sum() / n_land)


def land_count(y, land):
    """The number of points bernoulli_gamma_loss averages over (land broadcast to the targets),
    read to the host once."""
    return int(land.expand_as(y).sum())


def time_median(warmup, steps, f, sync):
    for _ in range(warmup):
        f()
    sync()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        f()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--load", required=True, help="the file bench_train_step --dump wrote")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--measure", choices=("train", "forward", "both"), default="both")
    # NHWC (channels_last) is PyTorch's fast layout for oneDNN convolutions on the CPU and for
    # cuDNN's tensor cores; NCHW is its default. The benchmark measures both and compares against
    # the faster, so the peer is in its fastest configuration.
    ap.add_argument("--layout", choices=("nchw", "channels_last"), default="channels_last")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--compile", action="store_true", help="torch.compile the net (PyTorch >= 2)")
    ap.add_argument("--fp32", action="store_true",
                    help="on a GPU, pure FP32 convolutions and matmuls (default: TF32, PyTorch's fastest FP32)")
    # As train.precision: bf16/fp16 run forward under torch.autocast(dtype) (convolutions in 16
    # bits, FP32 weights and loss), fp16 with torch.cuda.amp.GradScaler (dynamic loss scaling).
    ap.add_argument("--math", choices=("tf32", "fp32", "bf16", "fp16"), default=None,
                    help="tf32 (default), fp32 (= --fp32), bf16 or fp16 (autocast)")
    ap.add_argument("--loss-curve", type=int, default=0, help="train this many steps first, printing loss_<i>")
    args = ap.parse_args()
    math = args.math or ("fp32" if args.fp32 else "tf32")
    args.fp32 = math == "fp32"
    half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(math)

    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    if dev.type == "cuda":
        # PyTorch's fastest FP32 configuration on a GPU: cuDNN picks algorithms by timing, and
        # convolutions and matmuls run on tensor cores in TF32 unless --fp32.
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = not args.fp32
        torch.backends.cuda.matmul.allow_tf32 = not args.fp32
    arrays = read_dump(args.load)
    x, y = torch.from_numpy(arrays["x"]).to(dev), torch.from_numpy(arrays["y"]).to(dev)
    land = (torch.from_numpy(arrays["mask"]) > 0.5).to(dev)
    net = MNN(x.shape[1])
    net.load(arrays)
    net = net.to(dev)
    if args.layout == "channels_last":
        net = net.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    # Keras' epsilon (1e-7) as model/adam.h; the learning rate does not change the cost. On a GPU
    # the fused Adam (one launch for every tensor, PyTorch >= 2.0), its fastest, as ours is one
    # launch too; an older PyTorch, or a CPU, takes the default.
    opt = None
    if dev.type == "cuda":
        try:
            opt = torch.optim.Adam(net.parameters(), lr=1e-4, eps=1e-7, fused=True)
        except (TypeError, RuntimeError):
            opt = None
    if opt is None:
        opt = torch.optim.Adam(net.parameters(), lr=1e-4, eps=1e-7)
    print(f"optimizer Adam{' (fused)' if getattr(opt, 'defaults', {}).get('fused') else ''}")
    fwd = net
    if args.compile:
        if not hasattr(torch, "compile"):
            raise SystemExit(f"--compile needs PyTorch >= 2 (this is {torch.__version__})")
        fwd = torch.compile(net)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    n_land = land_count(y, land)  # once, outside the timed steps
    batch = x.shape[0]
    print(f"backend torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"mkldnn {torch.backends.mkldnn.is_available()}, layout {args.layout}, device {dev}"
          + (f" ({torch.cuda.get_device_name(dev)}, {math})" if dev.type == "cuda" else f", {math}")
          + (", torch.compile" if args.compile else ""))
    print(f"batch {batch}")

    first = []
    def forward():
        if half is None:
            return fwd(x)
        with torch.autocast(device_type=dev.type, dtype=half):
            return fwd(x)

    scaler = None
    if math == "fp16":
        scaler = (torch.amp.GradScaler(dev.type) if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler")
                  else torch.cuda.amp.GradScaler())

    def train_step(record=False):
        opt.zero_grad(set_to_none=True)
        loss = bernoulli_gamma_loss(forward().float(), y, land, n_land)  # the loss in FP32, as ours
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        if record or not first:
            first.append(loss.item())  # item() waits for a GPU: once, or per step of the curve

    for i in range(args.loss_curve):
        train_step(record=True)
        print(f"loss_{i} {first[-1]:.7g}")
    if args.measure != "forward":
        s = time_median(args.warmup, args.steps, train_step, sync)
        print(f"loss0 {first[0]:.7g}\ntrain_step_s {s:.4f}\ntrain_samples_per_s {batch / s:.4f}")
    if args.measure != "train":
        with torch.inference_mode():
            s = time_median(args.warmup, args.steps, forward, sync)
        print(f"forward_s {s:.4f}\nforward_samples_per_s {batch / s:.4f}")


if __name__ == "__main__":
    main()
