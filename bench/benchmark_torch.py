#!/usr/bin/python3
"""The PyTorch peer of `downscale benchmark`: Horovod's pytorch_synthetic_benchmark.py on one
process, the same model, batch, image size, optimizer (SGD, momentum 0.9, lr 0.01), loss
(softmax cross-entropy over 1000 classes), timing (warmup batches, then iterations of batches)
and thread count. torchvision's resnet50/resnet101 and inception_v3(aux_logits=False,
init_weights=False). Prints `key value` lines (bench/benchmark_models.sh shows both sides).
Needs Debian's python3-torch and python3-torchvision (run with /usr/bin/python3).
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F
import torchvision


def build(name):
    if name == "inception_v3":
        return torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False)
    return getattr(torchvision.models, name)(weights=None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50", choices=("resnet50", "resnet101", "inception_v3"))
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--image-size", type=int, default=0, help="0: 224 (ResNet), 299 (InceptionV3)")
    ap.add_argument("--num-warmup-batches", type=int, default=10)
    ap.add_argument("--num-batches-per-iter", type=int, default=10)
    ap.add_argument("--num-iters", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0, help="0: the cores this process may use")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    # channels_last (NHWC): PyTorch's fast layout for oneDNN on the CPU and cuDNN's tensor cores.
    ap.add_argument("--layout", choices=("nchw", "channels_last"), default="channels_last")
    ap.add_argument("--compile", action="store_true", help="torch.compile the net (PyTorch >= 2)")
    ap.add_argument("--precision", choices=("tf32", "fp32", "bf16", "fp16"), default="tf32",
                    help="as downscale's: bf16/fp16 under torch.autocast (fp16 with a GradScaler)")
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    import os
    threads = a.threads or len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
        # TF32 in every precision but fp32, as train_step_torch.py and PyTorch's default for
        # convolutions: under bf16/fp16 autocast covers the convolutions, and what it leaves in
        # FP32 runs fastest in TF32 (the peer's fastest configuration).
        torch.backends.cudnn.allow_tf32 = a.precision != "fp32"
        torch.backends.cuda.matmul.allow_tf32 = a.precision != "fp32"
    size = a.image_size or (299 if a.model == "inception_v3" else 224)
    net = build(a.model).to(dev)
    x = torch.randn(a.batch_size, 3, size, size, device=dev)
    y = torch.randint(0, 1000, (a.batch_size,), device=dev)
    if a.layout == "channels_last":
        net = net.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    fwd = net
    if a.compile:
        if not hasattr(torch, "compile"):
            raise SystemExit(f"--compile needs PyTorch >= 2 (this is {torch.__version__})")
        fwd = torch.compile(net)
    half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.precision)
    scaler = torch.cuda.amp.GradScaler() if a.precision == "fp16" and dev.type == "cuda" else None
    net.train()

    def step():
        opt.zero_grad(set_to_none=True)
        if half is not None:
            with torch.autocast(device_type=dev.type, dtype=half):
                loss = F.cross_entropy(fwd(x), y)
        else:
            loss = F.cross_entropy(fwd(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(a.num_warmup_batches):
        step()
    sync()
    rates = []
    for i in range(a.num_iters):
        t0 = time.perf_counter()
        for _ in range(a.num_batches_per_iter):
            step()
        sync()
        rates.append(a.batch_size * a.num_batches_per_iter / (time.perf_counter() - t0))
        print(f"iter {i} {rates[-1]:.3f}", flush=True)
    mean = statistics.fmean(rates)
    print(f"img_per_s {mean:.4f}")
    print(f"ci95 {1.96 * statistics.pstdev(rates):.4f}")
    print(f"parameters {sum(p.numel() for p in net.parameters())}")
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"cpu, {threads} threads"
    print(f"backend PyTorch {torch.__version__} torchvision {torchvision.__version__}, {name}, layout {a.layout}"
          + (", torch.compile" if a.compile else ""))


if __name__ == "__main__":
    main()
