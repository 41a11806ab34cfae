// The one launch shape of every hand-written kernel: a grid-stride loop over [0, n), so any n fits
// in a bounded grid (blocks_for). The loop's body is a plain function from model/kernels/.
#pragma once
#include <cstdint>

#define DS_GRID_STRIDE(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)
