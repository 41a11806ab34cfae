// Bodies of DeepESD's land-point scatter and gather: element i of the (n * k) x points values.
// scatter writes only land points (the caller fills the grid first); gather is its adjoint.
// Pure data movement, compared bit for bit on the CPU. See elementwise.h.
#pragma once
#include <cstdint>

#include "model/host_device.h"

namespace ds::model::kernels {

DS_HOST_DEVICE inline void scatter_at(int64_t i, int points, int64_t hw, const float* index, const float* src,
                                      float* dst) {
  const int64_t block = i / points;  // sample * k + channel
  dst[block * hw + int64_t(index[i % points])] = src[i];
}

DS_HOST_DEVICE inline void gather_at(int64_t i, int points, int64_t hw, const float* index, const float* dst_grad,
                                     float* src_grad) {
  const int64_t block = i / points;
  src_grad[i] = dst_grad[block * hw + int64_t(index[i % points])];
}

}  // namespace ds::model::kernels
