// For tests that hold a fused or tiled kernel body to the bodies it replaces bit for bit: data
// with the values where two float paths part (NaN, -0, +-inf, a BF16 rounding tie) among ordinary
// ones, and a comparison of bit patterns (NaN equals the same NaN, -0 differs from +0).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "model/kernels/half_cast.h"

namespace ds::model::test {

inline bool same_bits(float a, float b) { return kernels::float_bits(a) == kernels::float_bits(b); }

// `total` values uniform in [-3, 3) from `seed`, with the special values spread through them.
inline std::vector<float> special_probe(int64_t total, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(total));
  for (float& x : v) x = u(rng);
  const float specials[] = {std::nanf(""), -0.0f, 0.0f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), kernels::bits_float(0x3f808000u)};  // a BF16 tie
  for (size_t i = 0; i < sizeof specials / sizeof specials[0] && i < v.size(); ++i) v[i * 7 % v.size()] = specials[i];
  return v;
}

}  // namespace ds::model::test
