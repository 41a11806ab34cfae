// Nearest upsampling by f followed by a 'same' convolution, as one convolution on the small input
// (the polyphase form; model/cpu/dnnl_upsample_conv.cpp explains the algebra). The CUDA backend
// runs the small convolution with cuDNN around these bodies: the weight fold (and its adjoint for
// the weight gradient), the bias fold, and the phase interleave between the small convolution's
// O*f*f channels and the big grid (and back for the gradients); the interleave can add the bias
// and apply the ReLU on its way, and the way back can apply the ReLU's gradient mask, so that the
// big output and its gradient are each read or written once. Each body is a gather with a
// fixed summation order, the same order as the CPU backend's loops. Tested on the CPU against the
// default upsample-then-convolve path (tests/model/kernel_bodies_test.cpp).
#pragma once
#include <cstdint>

#include "model/backend.h"
#include "model/host_device.h"
#include "model/kernels/half_cast.h"

namespace ds::model::kernels {

DS_HOST_DEVICE inline int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Geometry of one polyphase convolution. Big: the upsampled 'same' convolution (O out channels,
// kh x kw taps, padding pad_top/pad_left before). Small: input H x W, output O*f*f channels,
// sh x sw taps; tap a of phase p lands on small tap floor_div(p + a - pad, f) - lo.
struct Polyphase {
  int f = 1, n = 0, c = 0, o = 0;
  int kh = 1, kw = 1, pad_top = 0, pad_left = 0;  // the big convolution
  int h = 0, w = 0;                               // the small input
  int sh = 1, sw = 1, lo_r = 0, lo_c = 0;         // the small kernel and its first offsets
};

// The phase count f as the per-element bodies use it: with F > 0 a compile-time constant (the
// CUDA kernels' F = 2 instances, MNN's x2 upsamplings, cuda_upsample_conv.cu), so that f's
// divisions and remainders, several per element, become shifts and masks; F = 0 reads p.f at run
// time (any f, the host). The instances must agree (tests/model/nhwc_tile_test.cpp's
// PhaseF2InstancesAreTheRunTimeFOnes): the same indices, the same values.
template <int F>
DS_HOST_DEVICE constexpr int phase_f(const Polyphase& p) {
  return F > 0 ? F : p.f;
}

DS_HOST_DEVICE inline int polyphase_tap(int phase, int a, int pad, int f, int lo) {
  return floor_div(phase + a - pad, f) - lo;
}

// Small-kernel output channel of output channel oc in phase (py, px).
template <int F = 0>
DS_HOST_DEVICE inline int64_t phase_channel(const Polyphase& p, int oc, int py, int px) {
  const int f = phase_f<F>(p);
  return (int64_t(oc) * f + py) * f + px;
}

// Folded weight i of ws (O*f*f, C, sh, sw): the sum of the big taps (a, b) of its output channel
// that land on its small tap, in (a, b) order.
DS_HOST_DEVICE inline void fold_weights_at(int64_t i, const Polyphase& p, const float* w, float* ws) {
  const int sc = int(i % p.sw), sr = int(i / p.sw % p.sh);
  const int64_t ic = i / (int64_t(p.sw) * p.sh) % p.c, ch = i / (int64_t(p.sw) * p.sh * p.c);
  const int oc = int(ch / (p.f * p.f)), py = int(ch / p.f % p.f), px = int(ch % p.f);
  const float* src = w + (int64_t(oc) * p.c + ic) * p.kh * p.kw;
  float s = 0.0f;
  for (int a = 0; a < p.kh; ++a) {
    if (polyphase_tap(py, a, p.pad_top, p.f, p.lo_r) != sr) continue;
    for (int b = 0; b < p.kw; ++b)
      if (polyphase_tap(px, b, p.pad_left, p.f, p.lo_c) == sc) s += src[a * p.kw + b];
  }
  ws[i] = s;
}

// The adjoint: big weight gradient i of dw (O, C, kh, kw) sums the folded gradients it went into,
// over the phases in (py, px) order.
DS_HOST_DEVICE inline void unfold_weight_grads_at(int64_t i, const Polyphase& p, const float* dws, float* dw) {
  const int b = int(i % p.kw), a = int(i / p.kw % p.kh);
  const int64_t ic = i / (int64_t(p.kw) * p.kh) % p.c;
  const int oc = int(i / (int64_t(p.kw) * p.kh * p.c));
  float s = 0.0f;
  for (int py = 0; py < p.f; ++py)
    for (int px = 0; px < p.f; ++px)
      s += dws[((phase_channel(p, oc, py, px) * p.c + ic) * p.sh + polyphase_tap(py, a, p.pad_top, p.f, p.lo_r)) *
                   p.sw +
               polyphase_tap(px, b, p.pad_left, p.f, p.lo_c)];
  dw[i] = s;
}

// Folded bias i (O*f*f): the bias of its output channel.
DS_HOST_DEVICE inline void fold_bias_at(int64_t i, int f, const float* b, float* bs) { bs[i] = b[i / (f * f)]; }

// Bias gradient of output channel oc: the sum over its f*f phases.
DS_HOST_DEVICE inline void unfold_bias_grad_at(int64_t oc, int f, const float* dbs, float* db) {
  float s = 0.0f;
  for (int k = 0; k < f * f; ++k) s += dbs[oc * f * f + k];
  db[oc] = s;
}

// Big element i of (N, O, f*H, f*W) from the small output (N, O*f*f, H, W):
// big[n, oc, f*h + py, f*w + px] = small[n, phase_channel(oc, py, px), h, w].
DS_HOST_DEVICE inline int64_t phase_source(int64_t i, const Polyphase& p) {
  const int bw = p.f * p.w, bh = p.f * p.h;
  const int x = int(i % bw), y = int(i / bw % bh);
  const int64_t plane = i / (int64_t(bw) * bh);  // n * O + oc
  const int64_t n = plane / p.o, oc = plane % p.o;
  const int64_t ch = phase_channel(p, int(oc), y % p.f, x % p.f);
  return ((n * p.o * p.f * p.f + ch) * p.h + y / p.f) * p.w + x / p.f;
}

DS_HOST_DEVICE inline void phase_interleave_at(int64_t i, const Polyphase& p, const float* small, float* big) {
  big[i] = small[phase_source(i, p)];
}

// Big element index that small element i of (N, O*f*f, H, W) comes from (the gradient's way back).
DS_HOST_DEVICE inline int64_t phase_target(int64_t i, const Polyphase& p) {
  const int x = int(i % p.w), y = int(i / p.w % p.h);
  const int64_t ch = i / (int64_t(p.w) * p.h) % (int64_t(p.o) * p.f * p.f);
  const int64_t n = i / (int64_t(p.w) * p.h * p.o * p.f * p.f);
  const int oc = int(ch / (p.f * p.f)), py = int(ch / p.f % p.f), px = int(ch % p.f);
  const int bw = p.f * p.w, bh = p.f * p.h;
  return ((n * p.o + oc) * bh + int64_t(p.f) * y + py) * bw + int64_t(p.f) * x + px;
}

DS_HOST_DEVICE inline void phase_deinterleave_at(int64_t i, const Polyphase& p, const float* big, float* small) {
  small[i] = big[phase_target(i, p)];
}

// --- The two fused big-grid passes, in row form (what the CUDA kernels run) ---
// Indexed flat, as phase_interleave_at and phase_deinterleave_at are, each element would spend six
// 64-bit divisions on its index (phase_source, phase_target), which on a GPU are emulated in
// software: tens of instructions each, over MNN's 108 M big elements per pass against a
// memory-bound 0.3 ms. In row form a warp takes a big row r = (n * O + oc) * (f * H) + y,
// decodes it once per lane (phase_row), and its lanes walk the columns x, where the source is
// row.base + (x % f) * H * W + x / f (32-bit; with F = 2 a mask and a shift).
struct PhaseRow {
  int64_t base = 0;  // small index of column 0's source (phase px = 0)
  int oc = 0;        // the row's output channel
};

template <int F = 0>
DS_HOST_DEVICE inline PhaseRow phase_row(int64_t r, const Polyphase& p) {
  const int f = phase_f<F>(p);
  const int bh = f * p.h, y = int(r % bh);
  const int64_t plane = r / bh, n = plane / p.o;
  PhaseRow row;
  row.oc = int(plane % p.o);
  row.base = ((n * p.o * f * f + phase_channel<F>(p, row.oc, y % f, 0)) * p.h + y / f) * p.w;
  return row;
}

// phase_source(r * f * W + x, p) from the decoded row.
template <int F = 0>
DS_HOST_DEVICE inline int64_t phase_source_in_row(const PhaseRow& row, int x, const Polyphase& p) {
  const int f = phase_f<F>(p);
  return row.base + int64_t(x % f) * p.h * p.w + x / f;
}

// The forward with the bias and the ReLU in the same pass (the small convolution then runs
// without bias), at big element r * f * W + x: big = relu(small[phase_source] + b[oc]). The same
// float operations as the small convolution's bias add (one addition of b[oc], which is the
// folded bias of every phase of oc) followed by relu_forward_at. b null: no bias.
template <int F = 0>
DS_HOST_DEVICE inline void phase_interleave_bias_relu_row_at(int64_t r, int x, const PhaseRow& row,
                                                             const Polyphase& p, const float* small, const float* b,
                                                             bool relu, float* big) {
  big[r * phase_f<F>(p) * p.w + x] = bias_relu_value(small[phase_source_in_row<F>(row, x, p)], b, row.oc, relu);
}

// The same into a 16-bit activation output (k), rounded after bias and ReLU: the interleave of an
// FP32 small output (a small convolution on the narrow FP32 kernels) for a 16-bit next layer.
template <int F = 0>
DS_HOST_DEVICE inline void phase_interleave_bias_relu_row_at(int64_t r, int x, const PhaseRow& row,
                                                             const Polyphase& p, const float* small, const float* b,
                                                             bool relu, Half16 k, uint16_t* big) {
  big[r * phase_f<F>(p) * p.w + x] =
      to_half16(k, bias_relu_value(small[phase_source_in_row<F>(row, x, p)], b, row.oc, relu));
}

// The backward's one pass over the big grid: the output gradient masked by the ReLU's gradient
// ([y > 0] from the forward output, as relu_backward_at) and de-interleaved onto the small grid,
// which both small convolutions' backward then read. y null: no ReLU, a plain de-interleave.
// Big element j = r * f * W + x goes to small element phase_source(j) (the interleave is a
// one-to-one map between the two grids, so every small element is written once); y and dy are
// read along rows, as they lie.
template <int F = 0>
DS_HOST_DEVICE inline void phase_deinterleave_relu_grad_row_at(int64_t r, int x, const PhaseRow& row,
                                                               const Polyphase& p, const float* y, const float* dy,
                                                               float* dys) {
  const int64_t j = r * phase_f<F>(p) * p.w + x;
  dys[phase_source_in_row<F>(row, x, p)] = (!y || y[j] > 0.0f) ? dy[j] : 0.0f;
}

// The same two passes with the small grid in 16 bits (train.precision bf16|fp16, NCHW, the
// fused casts on): the interleave widens the 16-bit small output as it reads it, and the
// de-interleave writes the masked gradient both in FP32 (the bias gradient's input) and rounded
// (what the two small convolutions read). Bit for bit the separate cast then the FP32 body.
// Big: float, or uint16_t for a 16-bit activation output (rounded after bias and ReLU).
template <int F = 0, typename Big>
DS_HOST_DEVICE inline void phase_interleave_half16_bias_relu_row_at(int64_t r, int x, const PhaseRow& row,
                                                                    const Polyphase& p, Half16 k,
                                                                    const uint16_t* small, const float* b, bool relu,
                                                                    Big* big) {
  store_act(k, bias_relu_value(from_half16(k, small[phase_source_in_row<F>(row, x, p)]), b, row.oc, relu), big,
            r * phase_f<F>(p) * p.w + x);
}

// Y: the forward output's storage, float or uint16_t (a 16-bit activation).
template <int F = 0, typename Y>
DS_HOST_DEVICE inline void phase_deinterleave_relu_grad_half16_row_at(int64_t r, int x, const PhaseRow& row,
                                                                      const Polyphase& p, Half16 k, const Y* y,
                                                                      const float* dy, float* dys, uint16_t* dysh) {
  const int64_t j = r * phase_f<F>(p) * p.w + x, s = phase_source_in_row<F>(row, x, p);
  const float v = (!y || load_act(k, y, j) > 0.0f) ? dy[j] : 0.0f;
  dys[s] = v;
  dysh[s] = to_half16(k, v);
}

// Host side: the polyphase form applies to stride 1, an input that really is f times upsampled
// and 'same' padding; anything else takes Backend's plain composition (as on the CPU).
inline bool polyphase_applies(const ConvDesc& d, int f) {
  return f > 1 && d.stride == 1 && d.in.h % f == 0 && d.in.w % f == 0 && d.pad_top + d.pad_bottom == d.kh - 1 &&
         d.pad_left + d.pad_right == d.kw - 1;
}

// The geometry and the small convolution (O*f*f output channels) equivalent to d after x f.
inline Polyphase make_polyphase(const ConvDesc& d, int f, ConvDesc& small) {
  Polyphase p;
  p.f = f;
  p.n = d.in.n;
  p.c = d.in.c;
  p.o = d.out_c;
  p.kh = d.kh;
  p.kw = d.kw;
  p.pad_top = d.pad_top;
  p.pad_left = d.pad_left;
  p.h = d.in.h / f;
  p.w = d.in.w / f;
  p.lo_r = floor_div(-d.pad_top, f);
  p.lo_c = floor_div(-d.pad_left, f);
  const int hi_r = floor_div(f - 1 + d.kh - 1 - d.pad_top, f), hi_c = floor_div(f - 1 + d.kw - 1 - d.pad_left, f);
  p.sh = hi_r - p.lo_r + 1;
  p.sw = hi_c - p.lo_c + 1;
  small = d;
  small.in = Shape{d.in.n, d.in.c, p.h, p.w};
  small.out_c = d.out_c * f * f;
  small.kh = p.sh;
  small.kw = p.sw;
  small.pad_top = -p.lo_r;
  small.pad_bottom = hi_r;
  small.pad_left = -p.lo_c;
  small.pad_right = hi_c;
  return p;
}

}  // namespace ds::model::kernels
