# Sourced by the benchmarks that run a PyTorch peer (train_step.sh, train_ddp.sh,
# benchmark_models.sh): what puts the peer in its fastest configuration, and the check that both
# sides computed the same thing.

# glibc's default allocator returns PyTorch's large buffers to the system after every step (700k
# page faults and 6 s of system time in a CPU train_step.sh run; an audit measured its train rate
# 1.2 -> 1.7 samples/s with these settings, and ResNet50 went 3.95 -> 6.57 img/s). Both sides run
# under it; ours keeps its buffers itself. A GLIBC_TUNABLES already set is kept.
export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736}

# agrees A B TOL: success when A and B are numbers within TOL relative to |B| (absolute when
# |B| < 1). Anything not a number fails: Debian's awk (mawk) takes "nan" as equal to anything.
agrees() {
  awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN {
    num = "^-?[0-9]+([.][0-9]*)?([eE][-+]?[0-9]+)?$"
    d = a - b; if (d < 0) d = -d; s = (b < 0 ? -b : b)
    exit !(a ~ num && b ~ num && d <= t * (s > 1 ? s : 1)) }'
}
