// Bodies of the nearest-upsampling kernels (NCHW, factor f): forward per output pixel, backward per
// input pixel summing its f x f block (a gather: no atomics, a fixed order). See elementwise.h.
#pragma once
#include <cstdint>

#include "model/host_device.h"

namespace ds::model::kernels {

// Output pixel i of the (h f) x (w f) planes reads its source pixel floor(o / f).
DS_HOST_DEVICE inline void upsample_forward_at(int64_t i, int h, int w, int f, const float* x, float* y) {
  const int oh = h * f, ow = w * f;
  const int64_t plane = i / (int64_t(oh) * ow);
  const int r = int(i / ow % oh), c = int(i % ow);
  y[i] = x[(plane * h + r / f) * w + c / f];
}

DS_HOST_DEVICE inline void upsample_backward_at(int64_t i, int h, int w, int f, const float* dy, float* dx) {
  const int ow = w * f;
  const int64_t plane = i / (int64_t(h) * w);
  const int r = int(i / w % h), c = int(i % w);
  const float* block = dy + (plane * h * f + int64_t(r) * f) * ow + int64_t(c) * f;
  float s = 0.0f;
  for (int a = 0; a < f; ++a)
    for (int b = 0; b < f; ++b) s += block[int64_t(a) * ow + b];
  dx[i] = s;
}

}  // namespace ds::model::kernels
