#!/usr/bin/python3
"""The PyTorch peer of bench_train_ddp: the same MNN, loss, optimizer, batches and thread count,
trained data-parallel with DistributedDataParallel over gloo (Debian's torch has no MPI backend).

Starts --ranks processes (torch.multiprocessing.spawn, MASTER_ADDR 127.0.0.1 on a free port);
rank r loads PREFIX.r that `bench_train_ddp --dump PREFIX` wrote (the initial weights and that
rank's batch), so loss0 and loss1 (after one Adam step on the gradient averaged over the ranks)
must equal ours. One rank runs the plain module, as our trainer runs without allreduce then.
Prints the same `key value` lines as bench_train_ddp, on rank 0. Needs Debian's python3-torch
(run with /usr/bin/python3). The model and loss are train_step_torch.py's.
"""
import argparse
import ctypes
import os
import signal
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_step_torch import MNN, bernoulli_gamma_loss, read_dump  # noqa: E402

FORWARD, BACKWARD, WAIT, OPTIMIZER, STEP = range(5)


def worker(rank, args, port):
    torch.set_num_threads(args.threads)
    size = args.ranks
    if size > 1:
        # Die with the launcher (a timeout or ^C ends it without stopping spawn's children).
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        # Loopback explicitly: gloo otherwise takes the address the host name resolves to.
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        dist.init_process_group("gloo", rank=rank, world_size=size)
    arrays = read_dump(f"{args.load}.{rank}")
    x, y = torch.from_numpy(arrays["x"]), torch.from_numpy(arrays["y"])
    land = torch.from_numpy(arrays["mask"]) > 0.5
    net = MNN(x.shape[1])
    net.load(arrays)
    if args.layout == "channels_last":
        # PyTorch's faster CPU layout for oneDNN convolutions (train_step.sh measures both).
        net = net.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    model = net
    if size > 1:
        # DDP broadcasts rank 0's parameters at construction (as our trainer's broadcast_state)
        # and reduces its buckets from autograd hooks as their gradients are ready, during
        # backward; backward() returns only when every bucket is reduced.
        model = torch.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=args.bucket_mb)
    # model/adam.h is Keras' Adam: epsilon 1e-7 is added to the uncorrected sqrt(v), which at step
    # t is PyTorch's eps = 1e-7 / sqrt(1 - 0.999^t). Taken for t = 1, so that the first update,
    # the one loss1 checks, is ours exactly (later ones differ in eps only: the cost is the same).
    opt = torch.optim.Adam(net.parameters(), lr=1e-4, eps=1e-7 / (1 - 0.999) ** 0.5)
    batch = x.shape[0]
    losses = []

    def step(phase):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = bernoulli_gamma_loss(model(x), y, land)
        losses.append(loss.item())
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        if phase is not None:
            # DDP waits for its allreduces inside backward: no separate wait to report.
            phase.copy_(torch.tensor([t1 - t0, t2 - t1, 0.0, t3 - t2, t3 - t0], dtype=torch.float64))

    for _ in range(args.warmup):
        step(None)
    nosync = args.nosync_steps if size > 1 else 0
    times = torch.zeros(args.steps + nosync, 5, dtype=torch.float64)
    if size > 1:
        dist.barrier()
    # The same step without the allreduce (DDP's no_sync: gradients stay local) alternates with
    # the others, as ours: step - this is what the communication adds.
    for i in range(max(args.steps, nosync)):
        if i < args.steps:
            step(times[i])
        if i < nosync:
            with model.no_sync():
                step(times[args.steps + i])
    everyone = [times]
    if size > 1:
        everyone = [torch.zeros_like(times) for _ in range(size)]
        dist.all_gather(everyone, times)
    if rank == 0:
        report(args, everyone, losses, batch, nosync)
    if size > 1:
        # Every rank still there before tearing down: a gloo group destroyed while a peer has
        # already exited can hang (seen with torch 1.13: one rank spinning after the report).
        dist.barrier()
        dist.destroy_process_group()


def report(args, everyone, losses, batch, nosync):
    size, steps = len(everyone), args.steps

    def step_median(first, count):  # per step the slowest rank, as ours
        return statistics.median(max(float(t[i, STEP]) for t in everyone) for i in range(first, first + count))

    def phase_median(p):
        return statistics.median(float(t[i, p]) for t in everyone for i in range(steps))

    step_s = step_median(0, steps)
    print(f"backend torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"mkldnn {torch.backends.mkldnn.is_available()}")
    print(f"communicator {'gloo' if size > 1 else 'none'}\nranks {size}\nthreads {args.threads}\n"
          f"batch_per_rank {batch}")
    print(f"buckets {'bucket_cap_mb %g (the first 1 MB)' % args.bucket_mb if size > 1 else 'none (1 rank: no DDP)'}")
    print(f"loss0 {losses[0]:.7g}\nloss1 {losses[1] if len(losses) > 1 else -1:.7g}")
    print(f"step_s {step_s:.4f}")
    for r, t in enumerate(everyone):
        print(f"rank{r}_step_s {statistics.median(float(t[i, STEP]) for i in range(steps)):.4f}")
    print(f"samples_per_s {batch * size / step_s:.4f}\nsamples_per_s_per_rank {batch / step_s:.4f}")
    print(f"forward_s {phase_median(FORWARD):.4f}\nbackward_s {phase_median(BACKWARD):.4f}\n"
          f"wait_s 0\noptimizer_s {phase_median(OPTIMIZER):.4f}")
    nosync_s = step_median(steps, nosync) if nosync else step_s
    print(f"step_nosync_s {nosync_s:.4f}\nexposed_share {(step_s - nosync_s) / step_s:.4f}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--load", required=True, help="PREFIX: rank r reads PREFIX.r (bench_train_ddp --dump)")
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="threads per rank")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--nosync-steps", type=int, default=4)
    ap.add_argument("--layout", choices=("nchw", "channels_last"), default="channels_last")
    ap.add_argument("--bucket-mb", type=float, default=4, help="DDP's bucket_cap_mb (ours: 4 MB by default)")
    args = ap.parse_args()
    if args.ranks == 1:
        worker(0, args, None)
    else:
        mp.spawn(worker, args=(args, free_port()), nprocs=args.ranks)


if __name__ == "__main__":
    main()
