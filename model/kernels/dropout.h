// Body of the dropout kernel: element i's mask from the counter-based generator of (seed, i), so
// the CPU and the GPU draw the same mask. See elementwise.h.
#pragma once
#include <cstdint>

#include "model/counter_rng.h"
#include "model/host_device.h"

namespace ds::model::kernels {

// Inverted dropout: mask 0 with probability rate, else 1/(1-rate) (keep_scale); y = x * mask.
DS_HOST_DEVICE inline void dropout_at(int64_t i, float rate, float keep_scale, uint64_t seed, const float* x, float* y,
                                      float* mask) {
  mask[i] = counter_uniform(seed, uint64_t(i)) < rate ? 0.0f : keep_scale;
  y[i] = x[i] * mask[i];
}

}  // namespace ds::model::kernels
