// The device side of model/kernels/lane_tree.h: a warp's 32 lanes summed by shuffle-down, lane l
// adding lane l + offset's value for offsets 16, 8, 4, 2, 1 (lane_tree_sum's order), so the CPU
// tests reproduce the GPU's sums bit for bit. Every lane of the warp must call it.
#pragma once
#include "model/kernels/lane_tree.h"

namespace ds::model {

__device__ inline float warp_tree_sum(float v) {
  for (int off = kernels::kLanes / 2; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

}  // namespace ds::model
