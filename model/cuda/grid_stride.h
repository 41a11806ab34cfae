// The one launch shape of every hand-written kernel: a grid-stride loop over [0, n), so any n fits
// in a bounded grid (blocks_for). The loop's body is a plain function from model/kernels/.
#pragma once
#include <cstdint>

#define DS_GRID_STRIDE(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

// The same loop with an int index where n < 2^30 (i plus the grid's stride then stays below 2^31
// for grids of blocks_for's size, at most 65,535 blocks), int64_t beyond: body(i) gets either, so
// a body that divides by its index (NHWC channel and pixel decodes) does it in 32 bits where the
// tensor allows; a 64-bit division costs about as much as an element's memory traffic.
template <class Body>
__device__ inline void grid_stride_int_where_it_fits(int64_t n, Body body) {
  if (n < (int64_t(1) << 30)) {
    for (int i = int(blockIdx.x * blockDim.x + threadIdx.x); i < int(n); i += int(blockDim.x * gridDim.x)) body(i);
    return;
  }
  DS_GRID_STRIDE(i, n) body(i);
}
