// A counter-based random generator: the i-th draw of stream `seed` is a pure function of (seed, i),
// so a dropout mask needs no generator state (resume is bit-identical without saving one), any
// thread or GPU block can draw element i in any order, and the CPU and CUDA backends draw the
// same mask. SplitMix64's finalizer (Steele, Lea & Flood 2014) passes BigCrush as a hash of a
// counter, which is plenty for dropout.
#pragma once
#include <cstdint>

#include "model/host_device.h"

namespace ds::model {

DS_HOST_DEVICE inline uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) from the top 24 bits: exactly representable as a float, so "u < rate" means
// the same on every device.
DS_HOST_DEVICE inline float counter_uniform(uint64_t seed, uint64_t i) {
  return float(splitmix64(splitmix64(seed) ^ i) >> 40) * (1.0f / 16777216.0f);
}

}  // namespace ds::model
