// Bodies of the k x k pooling kernels (NCHW) with per-side padding: forward per output pixel,
// backward per input pixel gathering from the outputs whose windows contain it (no atomics, a
// fixed order). Windows are clipped to the real cells: padding never wins a max and is not
// counted in an average (Keras/TF 'same'; PyTorch's count_include_pad=False). Max pooling's
// backward recomputes each window's maximum (first in row-major order on ties). pad_top/pad_left
// place the windows; the bottom/right padding is implied by out_h/out_w. See elementwise.h.
#pragma once
#include <cstdint>

#include "model/host_device.h"

namespace ds::model::kernels {

// Output (oh, ow)'s window clipped to the plane: rows [r0, r1), columns [c0, c1). Never empty
// while every pad < k (PoolDesc::out checks).
struct PoolWindow {
  int r0, r1, c0, c1;
  DS_HOST_DEVICE int count() const { return (r1 - r0) * (c1 - c0); }
};

DS_HOST_DEVICE inline PoolWindow pool_window(int h, int w, int oh, int ow, int k, int stride, int pad_top,
                                             int pad_left) {
  const int r = oh * stride - pad_top, c = ow * stride - pad_left;
  return PoolWindow{r > 0 ? r : 0, r + k < h ? r + k : h, c > 0 ? c : 0, c + k < w ? c + k : w};
}

// The offset in its plane of the maximum of a window.
DS_HOST_DEVICE inline int window_argmax(const float* plane, int w, const PoolWindow& win) {
  int best = win.r0 * w + win.c0;
  for (int a = win.r0; a < win.r1; ++a)
    for (int b = win.c0; b < win.c1; ++b) {
      const int o = a * w + b;
      if (plane[o] > plane[best]) best = o;
    }
  return best;
}

DS_HOST_DEVICE inline void pool_forward_at(int64_t i, int h, int w, int out_h, int out_w, int k, int stride,
                                           int pad_top, int pad_left, bool max, const float* x, float* y) {
  const int64_t plane = i / (int64_t(out_h) * out_w);
  const int oh = int(i / out_w % out_h), ow = int(i % out_w);
  const float* p = x + plane * h * w;
  const PoolWindow win = pool_window(h, w, oh, ow, k, stride, pad_top, pad_left);
  if (max) {
    y[i] = p[window_argmax(p, w, win)];
  } else {
    float s = 0;
    for (int a = win.r0; a < win.r1; ++a)
      for (int b = win.c0; b < win.c1; ++b) s += p[a * w + b];
    y[i] = s / float(win.count());
  }
}

// Input pixel (r, c) lies in the windows of output rows ceil((r+pad_top-k+1)/stride) ..
// floor((r+pad_top)/stride) (and likewise columns) that exist.
DS_HOST_DEVICE inline void pool_backward_at(int64_t i, int h, int w, int out_h, int out_w, int k, int stride,
                                            int pad_top, int pad_left, bool max, const float* x, const float* dy,
                                            float* dx) {
  const int64_t plane = i / (int64_t(h) * w);
  const int r = int(i / w % h), c = int(i % w), here = r * w + c;
  const int pr = r + pad_top, pc = c + pad_left;  // in padded coordinates
  const float* p = x + plane * h * w;
  const float* g = dy + plane * out_h * out_w;
  const int oh0 = pr - k + 1 <= 0 ? 0 : (pr - k + 1 + stride - 1) / stride;
  const int ow0 = pc - k + 1 <= 0 ? 0 : (pc - k + 1 + stride - 1) / stride;
  const int oh1 = pr / stride < out_h - 1 ? pr / stride : out_h - 1;
  const int ow1 = pc / stride < out_w - 1 ? pc / stride : out_w - 1;
  float s = 0;
  for (int oh = oh0; oh <= oh1; ++oh)
    for (int ow = ow0; ow <= ow1; ++ow) {
      const PoolWindow win = pool_window(h, w, oh, ow, k, stride, pad_top, pad_left);
      if (max) {
        if (window_argmax(p, w, win) == here) s += g[oh * out_w + ow];
      } else {
        s += g[oh * out_w + ow] / float(win.count());
      }
    }
  dx[i] = s;
}

}  // namespace ds::model::kernels
