// Bodies of the data-movement kernels: the strided block copy behind concat and its slice, and the
// zero-padding copy (and its crop) for convolutions whose padding cuDNN cannot express. Pure data
// movement: the CPU tests compare them bit for bit. See elementwise.h.
#pragma once
#include <cstdint>

#include "model/host_device.h"

namespace ds::model::kernels {

// Copies `block` elements (float, or uint16_t for 16-bit activations) per sample between buffers
// whose samples are stride_a / stride_b apart.
template <typename T>
DS_HOST_DEVICE inline void strided_block_copy_at(int64_t i, int64_t block, const T* a, int64_t stride_a, T* b,
                                                 int64_t stride_b) {
  const int64_t s = i / block, k = i % block;
  b[s * stride_b + k] = a[s * stride_a + k];
}

// Element i of the padded (ph x pw) planes: the input pixel (r - top, c - left) or 0 outside.
// T: float, or uint16_t for a 16-bit activation (a 16-bit zero is all zero bits, as FP32's).
template <typename T>
DS_HOST_DEVICE inline void pad_at(int64_t i, int h, int w, int top, int left, int ph, int pw, const T* x, T* xp) {
  const int64_t plane = i / (int64_t(ph) * pw);
  const int r = int(i / pw % ph) - top, c = int(i % pw) - left;
  xp[i] = (r >= 0 && r < h && c >= 0 && c < w) ? x[(plane * h + r) * w + c] : T(0);
}

// pad_at for a 16-bit NHWC activation (DOWNSCALE_CUDA_LAYOUT=nhwc with 16-bit activations):
// element i of the padded (n, ph, pw, cs) tensor, cs >= c channels a pixel: channels c..cs-1 are
// zero too (DOWNSCALE_CUDA_PAD_CHANNELS: cuDNN's 16-bit operands with channels rounded up to 8).
template <typename T>
DS_HOST_DEVICE inline void pad_nhwc_at(int64_t i, int c, int cs, int h, int w, int top, int left, int ph, int pw,
                                       const T* x, T* xp) {
  const int64_t pix = i / cs, n = pix / (int64_t(ph) * pw);
  const int ch = int(i % cs), r = int(pix / pw % ph) - top, col = int(pix % pw) - left;
  xp[i] = (ch < c && r >= 0 && r < h && col >= 0 && col < w) ? x[((n * h + r) * w + col) * c + ch] : T(0);
}

// Element i of the cropped (h x w) planes from the padded (ph x pw) ones.
DS_HOST_DEVICE inline void crop_at(int64_t i, int ph, int pw, int top, int left, int h, int w, const float* xp,
                                   float* x) {
  const int64_t plane = i / (int64_t(h) * w);
  const int r = int(i / w % h), c = int(i % w);
  x[i] = xp[(plane * ph + r + top) * pw + c + left];
}

}  // namespace ds::model::kernels
