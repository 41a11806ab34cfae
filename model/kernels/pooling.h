// Bodies of the 'valid' k x k pooling kernels (NCHW): forward per output pixel, backward per input
// pixel gathering from the outputs whose windows contain it (no atomics, a fixed order). Max
// pooling's backward recomputes each window's maximum (first in row-major order on ties). See
// elementwise.h.
#pragma once
#include <cstdint>

#include "model/host_device.h"

namespace ds::model::kernels {

// The offset in its plane of the maximum of output (oh, ow)'s window.
DS_HOST_DEVICE inline int window_argmax(const float* plane, int w, int oh, int ow, int k, int stride) {
  int best = oh * stride * w + ow * stride;
  for (int a = 0; a < k; ++a)
    for (int b = 0; b < k; ++b) {
      const int o = (oh * stride + a) * w + ow * stride + b;
      if (plane[o] > plane[best]) best = o;
    }
  return best;
}

DS_HOST_DEVICE inline void pool_forward_at(int64_t i, int h, int w, int out_h, int out_w, int k, int stride, bool max,
                                           const float* x, float* y) {
  const int64_t plane = i / (int64_t(out_h) * out_w);
  const int oh = int(i / out_w % out_h), ow = int(i % out_w);
  const float* p = x + plane * h * w;
  if (max) {
    y[i] = p[window_argmax(p, w, oh, ow, k, stride)];
  } else {
    float s = 0;
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b) s += p[(oh * stride + a) * w + ow * stride + b];
    y[i] = s / float(k * k);
  }
}

// Input pixel (r, c) lies in the windows of output rows ceil((r-k+1)/stride) .. floor(r/stride)
// (and likewise columns) that exist.
DS_HOST_DEVICE inline void pool_backward_at(int64_t i, int h, int w, int out_h, int out_w, int k, int stride, bool max,
                                            const float* x, const float* dy, float* dx) {
  const int64_t plane = i / (int64_t(h) * w);
  const int r = int(i / w % h), c = int(i % w), here = r * w + c;
  const float* p = x + plane * h * w;
  const float* g = dy + plane * out_h * out_w;
  const int oh0 = r - k + 1 <= 0 ? 0 : (r - k + 1 + stride - 1) / stride;
  const int ow0 = c - k + 1 <= 0 ? 0 : (c - k + 1 + stride - 1) / stride;
  const int oh1 = r / stride < out_h - 1 ? r / stride : out_h - 1;
  const int ow1 = c / stride < out_w - 1 ? c / stride : out_w - 1;
  float s = 0;
  for (int oh = oh0; oh <= oh1; ++oh)
    for (int ow = ow0; ow <= ow1; ++ow) {
      if (max) {
        if (window_argmax(p, w, oh, ow, k, stride) == here) s += g[oh * out_w + ow];
      } else {
        s += g[oh * out_w + ow] / float(k * k);
      }
    }
  dx[i] = s;
}

}  // namespace ds::model::kernels
