// Bodies of the casts around reduced-precision convolutions (train.precision bf16|fp16): FP32
// NCHW tensors and OIHW weights are rounded to 16-bit values (BF16: 8 exponent, 7 mantissa bits;
// FP16: IEEE binary16) in a scratch buffer, optionally transposed to NHWC (tensor cores prefer it;
// the weights then become OHWI, cuDNN's NHWC filter order), and the convolution's 16-bit output is
// widened back to FP32 NCHW. The values are handled as bit patterns (uint16_t) so the same integer
// arithmetic runs on the host and the device and the CPU tests pin it exactly (KernelBodies):
// round to nearest even, overflow to infinity, NaN kept NaN, FP16 subnormals rounded correctly.
#pragma once
#include <cstdint>
#include <cstring>

#include "model/host_device.h"
#include "model/kernels/elementwise.h"

namespace ds::model::kernels {

enum class Half16 : int { kBf16 = 0, kFp16 = 1 };

DS_HOST_DEVICE inline uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

DS_HOST_DEVICE inline float bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// FP32 -> BF16, round to nearest even; NaN stays a (quiet) NaN.
DS_HOST_DEVICE inline uint16_t float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return uint16_t((u + rounding) >> 16);  // a carry into the exponent rounds up to infinity: correct
}

DS_HOST_DEVICE inline float bf16_to_float(uint16_t h) { return bits_float(uint32_t(h) << 16); }

// FP32 -> IEEE binary16, round to nearest even; beyond 65504 (after rounding) -> infinity.
DS_HOST_DEVICE inline uint16_t float_to_fp16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520 rounds to infinity
  if (a < 0x38800000u) {                                  // below 2^-14: subnormal or zero
    if (a < 0x33000000u) return sign;                     // below 2^-25: rounds to zero
    const uint32_t e = a >> 23;                           // 102..112
    const uint32_t m = (a & 0x7fffffu) | 0x800000u;       // implicit bit
    const uint32_t shift = 126u - e;                      // 14..24: value = m * 2^(e-150), ulp 2^-24
    const uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    const uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
    return uint16_t(sign | r);  // r may reach 0x400: the smallest normal, bits correct as is
  }
  // Normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits.
  const uint32_t rebased = a - (uint32_t(127 - 15) << 23);
  const uint32_t r = rebased + 0xfffu + ((rebased >> 13) & 1u);
  return uint16_t(sign | (r >> 13));
}

DS_HOST_DEVICE inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return bits_float(sign | 0x7f800000u | (m << 13));  // inf / NaN
  if (e == 0) {                                                      // zero / subnormal: m * 2^-24
    const float v = float(m) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return bits_float(sign | ((e + 127u - 15u) << 23) | (m << 13));
}

DS_HOST_DEVICE inline uint16_t to_half16(Half16 k, float f) {
  return k == Half16::kBf16 ? float_to_bf16(f) : float_to_fp16(f);
}
DS_HOST_DEVICE inline float from_half16(Half16 k, uint16_t h) {
  return k == Half16::kBf16 ? bf16_to_float(h) : fp16_to_float(h);
}

// An activation element as FP32 whether it is stored in FP32 or in 16 bits (a 16-bit activation,
// Backend::activation_dtype), and stored back the same way (rounded to nearest even when 16-bit):
// what lets one body serve both storages.
DS_HOST_DEVICE inline float load_act(Half16, const float* p, int64_t i) { return p[i]; }
DS_HOST_DEVICE inline float load_act(Half16 k, const uint16_t* p, int64_t i) { return from_half16(k, p[i]); }
DS_HOST_DEVICE inline void store_act(Half16, float v, float* p, int64_t i) { p[i] = v; }
DS_HOST_DEVICE inline void store_act(Half16 k, float v, uint16_t* p, int64_t i) { p[i] = to_half16(k, v); }

// Flat NCHW index of element i of an (n, c, h, w) tensor laid out NHWC when nhwc, else NCHW.
DS_HOST_DEVICE inline int64_t nchw_index_of(int64_t i, int c, int h, int w, bool nhwc) {
  if (!nhwc) return i;
  const int64_t ch = i % c, pix = i / c;  // pix = (n*h + y)*w + x
  const int64_t hw = int64_t(h) * w, s = pix / hw, yx = pix % hw;
  return (s * c + ch) * hw + yx;
}

// Element i (in the 16-bit buffer's layout) of the FP32 NCHW tensor x, rounded.
DS_HOST_DEVICE inline void cast_to_half16_at(int64_t i, Half16 k, int c, int h, int w, bool nhwc, const float* x,
                                             uint16_t* xh) {
  xh[i] = to_half16(k, x[nchw_index_of(i, c, h, w, nhwc)]);
}

// Element i of the 16-bit buffer (its layout) widened into the FP32 NCHW tensor y.
DS_HOST_DEVICE inline void cast_from_half16_at(int64_t i, Half16 k, int c, int h, int w, bool nhwc,
                                               const uint16_t* yh, float* y) {
  y[nchw_index_of(i, c, h, w, nhwc)] = from_half16(k, yh[i]);
}

// --- The casts fused into their neighbours (DOWNSCALE_CUDA_FUSE16, on by default) ---
// A 16-bit convolution's forward epilogue in one pass (NCHW): element i of channel ch (the
// caller's loop knows it: a block per (sample, channel) plane, so no per-element division) is
// widened (from_half16), gets + b[ch] (b null: none) and the ReLU when relu. The same float
// operations, in the same order, as the separate widening, bias add (cudnnAddTensor: y = 1 * b +
// 1 * y) and relu_forward_at, so the result is the same bit for bit; y is written once, not thrice.
// Y: float, or uint16_t for a 16-bit activation output (then rounded once more, after bias and
// ReLU; yh and y may then be the same buffer: each element is read before it is written).
template <typename Y>
DS_HOST_DEVICE inline void cast_from_half16_bias_relu_at(int64_t i, int ch, Half16 k, const uint16_t* yh,
                                                         const float* b, bool relu, Y* y) {
  store_act(k, bias_relu_value(from_half16(k, yh[i]), b, ch, relu), y, i);
}

// A convolution's output gradient before its two 16-bit backward passes, in one pass (NCHW):
// g = [y > 0] dy (the ReLU's gradient, relu_backward_at; y null: no ReLU, g = dy) kept in FP32
// when g is non-null (the bias gradient reads it) and rounded to 16 bits into gh, which the data
// and the filter pass then both read (each cast it on its own before).
// Y: the forward output's storage, float or uint16_t (a 16-bit activation: the mask of its
// widened value, as relu_backward16_at).
template <typename Y>
DS_HOST_DEVICE inline void relu_grad_to_half16_at(int64_t i, Half16 k, const Y* y, const float* dy, float* g,
                                                  uint16_t* gh) {
  const float v = (!y || load_act(k, y, i) > 0.0f) ? dy[i] : 0.0f;
  if (g) g[i] = v;
  gh[i] = to_half16(k, v);
}

// The ReLU's gradient with its output stored in 16 bits (a 16-bit activation, Backend::
// relu_backward16): dx = dy where the 16-bit y is > 0. NaN is not > 0, as in relu_backward_at.
DS_HOST_DEVICE inline void relu_backward16_at(int64_t i, Half16 k, const uint16_t* y, const float* dy, float* dx) {
  dx[i] = from_half16(k, y[i]) > 0.0f ? dy[i] : 0.0f;
}

}  // namespace ds::model::kernels
