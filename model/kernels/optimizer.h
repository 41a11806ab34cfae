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

// The multi-tensor Adam (Backend::adam_update_many on the GPU): its work list is chunks of at
// most kAdamChunk consecutive elements of one span, in span order, and a block takes a chunk, its
// threads the chunk's elements; each element gets adam_at with its own span's pointers, so every
// weight changes exactly as under adam_update. adam_chunks builds the list (host side).
// 4,096 elements: 16 a thread of a 256-thread block, and about 400 blocks for MNN's 1.6 M weights,
// enough to keep the memory busy (32,768 made one block per SM, each thread's 128 updates in turn).
constexpr int64_t kAdamChunk = 4096;
struct AdamChunk {
  int span;
  int64_t begin, end;  // elements [begin, end) of the span
};
inline int64_t adam_chunk_count(const int64_t* sizes, int spans) {
  int64_t c = 0;
  for (int s = 0; s < spans; ++s) c += (sizes[s] + kAdamChunk - 1) / kAdamChunk;
  return c;
}
// Writes adam_chunk_count(sizes, spans) chunks: every element of every span in exactly one.
inline void adam_chunks(const int64_t* sizes, int spans, AdamChunk* out) {
  int64_t k = 0;
  for (int s = 0; s < spans; ++s)
    for (int64_t b = 0; b < sizes[s]; b += kAdamChunk) out[k++] = {s, b, b + kAdamChunk < sizes[s] ? b + kAdamChunk : sizes[s]};
}

// As Keras: v = momentum v - lr g; w += v.
DS_HOST_DEVICE inline void sgd_momentum_at(int64_t i, float* w, const float* g, float* v, float lr, float momentum) {
  const float vi = momentum * v[i] - lr * g[i];
  v[i] = vi;
  w[i] += vi;
}

}  // namespace ds::model::kernels
