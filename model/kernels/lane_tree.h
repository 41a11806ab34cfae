// The order in which the 32 lanes of a warp add their values on the GPU (shuffle down by 16, 8,
// 4, 2, 1: lane l adds lane l + offset's value), written for the host so the CPU tests sum in
// exactly the GPU's order. The device side is warp_tree_sum (model/cuda/warp_tree.cuh).
#pragma once

#include "model/host_device.h"

namespace ds::model::kernels {

constexpr int kLanes = 32;

// v: 32 values, overwritten; returns what lane 0 holds at the end.
DS_HOST_DEVICE inline float lane_tree_sum(float* v) {
  for (int off = kLanes / 2; off > 0; off /= 2)
    for (int l = 0; l < off; ++l) v[l] += v[l + off];
  return v[0];
}

}  // namespace ds::model::kernels
