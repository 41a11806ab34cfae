// The bias gradient of a convolution, db[c] = sum over n, y, x of dy[n, c, y, x] (NCHW), as the
// CUDA backend sums it (model/cuda/cuda_bias_grad.cu). cuDNN's cudnnConvolutionBackwardBias took
// about 50 us per call on an H100 whatever the size (2026-11-23 pass times: every MNN backward
// filter pass was 0.05 ms longer than its convolution, 10 to 200 output channels alike), against
// the 3 us that reading MNN's largest branch gradient (10 MB) takes: it spreads too little work.
// Here a warp of 32 lanes sums each chunk of one (sample, channel) plane, lane l taking elements
// l, l + 32, ..., the lanes combine by lane_tree_sum's tree (the order of the GPU's shuffles),
// and the partials of a channel are added in (sample, chunk) order: no atomics, the same result
// on every run and every GPU. tests/model/bias_grad_test.cpp runs these bodies on the CPU.
#pragma once
#include <cstdint>

#include "model/host_device.h"
#include "model/kernels/lane_tree.h"

namespace ds::model::kernels {

// Floats of a plane one partial covers: MNN's planes (1,590 to 25,440 floats) take 1 to 7 chunks,
// 50 to 200 per lane.
constexpr int64_t kBiasChunk = 4096;

struct BiasGrad {
  int n = 0, c = 0;
  int64_t plane = 0;  // h * w
  int chunks = 1;     // partials per (sample, channel) plane
};

inline BiasGrad make_bias_grad(int n, int c, int64_t plane) {
  BiasGrad g;
  g.n = n;
  g.c = c;
  g.plane = plane;
  g.chunks = plane > 0 ? int((plane + kBiasChunk - 1) / kBiasChunk) : 1;
  return g;
}

// Partials (one float each): (sample, channel, chunk), chunk fastest.
inline int64_t bias_grad_partials(const BiasGrad& g) { return int64_t(g.n) * g.c * g.chunks; }

// Lane t % 32 of partial u = t / 32: its share of the chunk, in ascending element order.
DS_HOST_DEVICE inline float bias_grad_lane(int64_t t, const BiasGrad& g, const float* dy) {
  const int lane = int(t % kLanes);
  const int64_t u = t / kLanes;
  const int64_t chunk = u % g.chunks, plane_index = u / g.chunks;  // plane_index = sample * c + channel
  const int64_t first = chunk * kBiasChunk;
  const int64_t last = first + kBiasChunk < g.plane ? first + kBiasChunk : g.plane;
  const float* p = dy + plane_index * g.plane;
  float acc = 0.0f;
  for (int64_t j = first + lane; j < last; j += kLanes) acc += p[j];
  return acc;
}

// db[ch]: channel ch's partials added in (sample, chunk) order, in double (n * chunks values: 32
// to 224 for MNN at batch 32), rounded once.
DS_HOST_DEVICE inline void bias_grad_finish_at(int64_t ch, const BiasGrad& g, const float* partial, float* db) {
  double s = 0.0;
  for (int n = 0; n < g.n; ++n)
    for (int k = 0; k < g.chunks; ++k) s += partial[(int64_t(n) * g.c + ch) * g.chunks + k];
  db[ch] = float(s);
}

}  // namespace ds::model::kernels
