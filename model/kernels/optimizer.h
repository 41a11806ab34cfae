// Bodies of the optimizer kernels: weight i's Adam and SGD-with-momentum updates. See elementwise.h.
#pragma once
#include <cmath>
#include <cstdint>

#include "model/host_device.h"

namespace ds::model::kernels {

// Adam with lr_t already bias-corrected (model/adam.cpp).
DS_HOST_DEVICE inline void adam_at(int64_t i, float* w, const float* g, float* m, float* v, float lr_t, float b1,
                                   float b2, float eps) {
  const float gi = g[i];
  const float mi = b1 * m[i] + (1.0f - b1) * gi;
  const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
  m[i] = mi;
  v[i] = vi;
  w[i] -= lr_t * mi / (sqrtf(vi) + eps);
}

// As Keras: v = momentum v - lr g; w += v.
DS_HOST_DEVICE inline void sgd_momentum_at(int64_t i, float* w, const float* g, float* v, float lr, float momentum) {
  const float vi = momentum * v[i] - lr * g[i];
  v[i] = vi;
  w[i] += vi;
}

}  // namespace ds::model::kernels
