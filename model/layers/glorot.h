// Keras' glorot_uniform initializer, shared by Conv2D and Dense: U(-limit, limit) with
// limit = sqrt(6 / (fan_in + fan_out)). Uniform doubles are made from the top 53 bits by hand
// because std::uniform_real_distribution differs between standard libraries, and a seed should
// give the same network everywhere.
#pragma once
#include <cmath>
#include <random>
#include <vector>

#include "model/tensor.h"

namespace ds::model {

inline void glorot_uniform(std::mt19937_64& rng, double fan_in, double fan_out, Tensor& w) {
  const double limit = std::sqrt(6.0 / (fan_in + fan_out));
  std::vector<float> host(size_t(w.size()));
  for (float& v : host) {
    const double u = double(rng() >> 11) * 0x1.0p-53;  // [0, 1)
    v = float((2.0 * u - 1.0) * limit);
  }
  w.upload(host.data());
}

}  // namespace ds::model
