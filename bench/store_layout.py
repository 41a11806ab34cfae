#!/usr/bin/python3
"""What the training store's layout costs reads: North America shapes (x 20x30x53, y 117x209,
float32). The store now: chunks of one sample with a Fletcher-32 checksum each
(io/training_store.cpp, since commit 962e58b). The peer: the layout it replaced, chunks of 8
samples without checksums. Also shown: 8-sample chunks with checksums (the alternative the review
turned down) and a contiguous layout without checksums (no chunk cost at all, for scale).

Two reads, as train makes them: a whole split at once (train.data_on_device: the splits read once
into device memory), cold (page cache dropped) and warm; and shuffled batches of 32 read row by row
(train/batches.cpp: consecutive rows in one call, shuffled rows rarely are), x and y, warm.
Prints each layout's rate and its ratio to the peer (< 1: slower).

  /usr/bin/python3 bench/store_layout.py [SAMPLES=2000] [FOLDER=/tmp]   (Debian's python3-h5py)
"""
import os
import sys
import time

import h5py
import numpy as np

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
if N < 32:
    sys.exit("store_layout.py: SAMPLES must be 32 or more (one batch)")
folder = sys.argv[2] if len(sys.argv) > 2 else "/tmp"
rng = np.random.default_rng(0)
x = rng.standard_normal((N, 20, 30, 53), dtype=np.float32)
y = rng.standard_normal((N, 117, 209), dtype=np.float32)
# (label, samples per chunk (0: contiguous), Fletcher-32); the first is the peer.
layouts = (("8-sample chunks, no checksum (before, peer)", 8, False),
           ("1-sample chunks + Fletcher-32 (the store)", 1, True),
           ("8-sample chunks + Fletcher-32", 8, True),
           ("contiguous, no checksum", 0, False))


def write(path, rows, checksum):
    with h5py.File(path, "w") as f:
        for name, a in (("x", x), ("y", y), ("obs", y)):
            kw = dict(chunks=(rows,) + a.shape[1:], fletcher32=checksum) if rows else {}
            f.create_dataset(name, data=a, **kw)


def whole(path):
    t = time.perf_counter()
    with h5py.File(path) as f:
        for n in ("x", "y", "obs"):
            f[n][...]
    return time.perf_counter() - t


def batches(path, order):
    bx = np.empty((32,) + x.shape[1:], np.float32)
    by = np.empty((32,) + y.shape[1:], np.float32)
    t = time.perf_counter()
    with h5py.File(path) as f:
        dx, dy = f["x"], f["y"]
        for b in range(0, N - 31, 32):
            for i, r in enumerate(np.sort(order[b:b + 32])):
                dx.read_direct(bx, np.s_[r:r + 1], np.s_[i:i + 1])
                dy.read_direct(by, np.s_[r:r + 1], np.s_[i:i + 1])
    return time.perf_counter() - t


results = []
order = rng.permutation(N)
batched = (N // 32) * 32  # the samples the batches read
for label, rows, checksum in layouts:
    path = os.path.join(folder, f"store_layout_{os.getpid()}.h5")
    try:
        write(path, rows, checksum)
        os.sync()
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # cold: out of the page cache
        os.close(fd)
        gb = os.path.getsize(path) / 1e9
        cold = whole(path)
        warm = min(whole(path) for _ in range(2))
        batch = min(batches(path, order) for _ in range(2))
        results.append((label, gb, gb / cold, gb / warm, batched / batch))
    finally:
        if os.path.exists(path):
            os.remove(path)

print(f"{N} samples; h5py {h5py.version.version}, HDF5 {h5py.version.hdf5_version}")
print(f"{'layout':44s} {'GB':>5s} {'whole cold GB/s':>16s} {'whole warm GB/s':>16s} {'batches samples/s':>18s}")
peer = results[0]
for label, gb, c, w, b in results:
    print(f"{label:44s} {gb:5.2f} {c:9.2f} ({c / peer[2]:.2f}x) {w:9.2f} ({w / peer[3]:.2f}x) "
          f"{b:11.0f} ({b / peer[4]:.2f}x)")
