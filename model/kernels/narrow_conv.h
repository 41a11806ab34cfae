// Convolutions with few output channels (out_c <= kNarrowConvMaxOut), stride 1, NCHW, any kernel
// size and per-side zero padding: the bodies of the CUDA backend's narrow path
// (model/cuda/cuda_narrow_conv.cu). cuDNN has no good algorithm for MNN's head (132 -> 3 channels,
// 4x4 'valid'): its weight gradient is a 3 x 2112 result reduced over every pixel, its data
// gradient a K = 48 product writing the whole input. Every pass here is a gather that reads its
// inputs about once and keeps the few output channels in registers.
//
// Everything is plain FP32 with fixed summation orders (written at each body), so results do not
// depend on the launch: no float atomics. The weight and bias gradients are summed in two steps,
// partial sums per warp (per chunk of (n, output row) rows; on the window path per image, channel
// and block of columns), then the partials in order.
// tests/model/narrow_conv_test.cpp runs each body over every index on the CPU against the CPU
// backend's convolution.
#pragma once
#include <cstdint>

#include "model/backend.h"
#include "model/host_device.h"
#include "model/kernels/half_cast.h"
#include "model/kernels/lane_tree.h"

#ifdef __CUDACC__
#define DS_NARROW_UNROLL _Pragma("unroll")
#else
#define DS_NARROW_UNROLL
#endif

namespace ds::model::kernels {

constexpr int kNarrowConvMaxOut = 4;  // output channels the narrow path takes
// Input channels one backward-data or weight-gradient thread handles: the dy values it loads are
// shared by these channels (8: 32 accumulators with 4 outputs, within a GPU thread's registers).
constexpr int kNarrowChannelGroup = 8;
// Threads that split one weight-gradient partial's columns (a warp): column j goes to lane j % 32.
constexpr int kNarrowLanes = kLanes;
// Output rows per bias-gradient partial.
constexpr int kNarrowBiasChunkRows = 16;
// About how many warps the weight-gradient pass should have (two waves of an H100's 132 SMs x 64
// resident warps); the chunk size follows from it and from the shape only, never from the device,
// so the summation order is the same on every GPU.
constexpr int64_t kNarrowTargetWarps = 16384;

// Kernels up to kNarrowWindow x kNarrowWindow (MNN's head: 4x4) take the sliding-window bodies
// for all three passes (the *_window_* functions below); larger ones the per-pixel and per-tap
// bodies.
constexpr int kNarrowWindow = 4;
// One window weight-gradient partial: taps (window row slot, column) x output channels.
constexpr int kNarrowWindowSlots = kNarrowWindow * kNarrowWindow * kNarrowConvMaxOut;

// Blocks per SM for the kernels that copy the packed weights into shared memory, at most: enough
// to hide latency, few enough that the per-block copy (33 KB for the head) stays a small part of
// the traffic.
constexpr int kNarrowBlocksPerSm = 8;

// Grid of such a kernel: `blocks` (one per kThreads threads, from blocks_for) capped at the blocks
// resident at once, sm_count x resident_per_sm (cudaOccupancyMaxActiveBlocksPerMultiprocessor,
// at most kNarrowBlocksPerSm), so its grid-stride loop runs as one wave. A fixed 8 per SM would be
// two: the head's 33 KB (+1 KB the runtime reserves per block) fit 6 times in an H100 SM's 228 KB,
// so 2 of every 8 blocks would run alone after the others (about 1.5x the pass's time).
inline int narrow_shared_grid(int blocks, int sm_count, int resident_per_sm) {
  int per_sm = resident_per_sm < kNarrowBlocksPerSm ? resident_per_sm : kNarrowBlocksPerSm;
  if (per_sm < 1) per_sm = 1;  // none fits: the launch itself then says why
  const int cap = sm_count * per_sm;
  return blocks < cap ? blocks : cap;
}

// One narrow convolution's geometry and its weight-gradient chunking.
struct NarrowConv {
  int n = 0, c = 0, h = 0, w = 0;  // input
  int o = 0, oh = 0, ow = 0;       // output channels and size
  int kh = 1, kw = 1, pad_top = 0, pad_left = 0;
  int groups = 0;                  // channel groups: ceil(c / kNarrowChannelGroup)
  int chunk_rows = 1, chunks = 1;  // weight-gradient partials: rows (n, output row) per chunk
  int bias_chunks = 1;             // bias partials of kNarrowBiasChunkRows rows
  bool window = false;             // the sliding-window bodies (kh, kw <= kNarrowWindow)
  int col_blocks = 1;              // the window path's blocks of 32 output columns: ceil(ow / 32)
  // The bodies that read x take it as float or, for a 16-bit activation input (X = uint16_t),
  // as this 16-bit type, widened as it is loaded (load_act): the same FP32 arithmetic on the
  // same values as an FP32 copy of the widened x.
  Half16 xk = Half16::kBf16;
};

// The path applies to stride 1 and 1..kNarrowConvMaxOut output channels (any kernel, any padding).
inline bool narrow_conv_applies(const ConvDesc& d) {
  return d.stride == 1 && d.out_c >= 1 && d.out_c <= kNarrowConvMaxOut && d.pad_top >= 0 && d.pad_bottom >= 0 &&
         d.pad_left >= 0 && d.pad_right >= 0;
}

inline NarrowConv make_narrow_conv(const ConvDesc& d) {
  NarrowConv g;
  const Shape out = d.out();
  g.n = d.in.n;
  g.c = d.in.c;
  g.h = d.in.h;
  g.w = d.in.w;
  g.o = d.out_c;
  g.oh = out.h;
  g.ow = out.w;
  g.kh = d.kh;
  g.kw = d.kw;
  g.pad_top = d.pad_top;
  g.pad_left = d.pad_left;
  g.groups = (g.c + kNarrowChannelGroup - 1) / kNarrowChannelGroup;
  const int64_t rows = int64_t(g.n) * g.oh, per_chunk = int64_t(g.groups) * g.kh * g.kw;
  int64_t chunks = (kNarrowTargetWarps + per_chunk - 1) / per_chunk;
  if (chunks > rows) chunks = rows;
  if (chunks < 1) chunks = 1;
  g.chunk_rows = int((rows + chunks - 1) / chunks);
  g.chunks = int((rows + g.chunk_rows - 1) / g.chunk_rows);
  g.bias_chunks = int((rows + kNarrowBiasChunkRows - 1) / kNarrowBiasChunkRows);
  g.window = g.kh <= kNarrowWindow && g.kw <= kNarrowWindow;
  g.col_blocks = (g.ow + kNarrowLanes - 1) / kNarrowLanes;
  return g;
}

// Sizes of the scratch buffers (floats): packed weights, weight-gradient partials, bias partials.
inline int64_t narrow_packed_weights(const NarrowConv& g) { return int64_t(g.c) * g.kh * g.kw * kNarrowConvMaxOut; }
inline int64_t narrow_weight_partials(const NarrowConv& g) {
  if (g.window) return int64_t(g.n) * g.c * g.col_blocks * kNarrowWindowSlots;
  return int64_t(g.chunks) * g.groups * g.kh * g.kw * kNarrowChannelGroup * kNarrowConvMaxOut;
}
// Warps of the weight-gradient partial pass (each writes one partial).
inline int64_t narrow_weight_warps(const NarrowConv& g) {
  if (g.window) return int64_t(g.n) * g.c * g.col_blocks;
  return int64_t(g.chunks) * g.groups * g.kh * g.kw;
}
inline int64_t narrow_bias_partials(const NarrowConv& g) { return int64_t(g.bias_chunks) * kNarrowConvMaxOut; }

// The four output channels' weights of tap t = (c * kh + a) * kw + e, one aligned float4 on the GPU.
DS_HOST_DEVICE inline void narrow_load4(const float* p, float v[4]) {
#ifdef __CUDA_ARCH__
  const float4 q = *reinterpret_cast<const float4*>(p);
  v[0] = q.x;
  v[1] = q.y;
  v[2] = q.z;
  v[3] = q.w;
#else
  for (int k = 0; k < 4; ++k) v[k] = p[k];
#endif
}

// Packed weight i of wp (c, kh, kw, kNarrowConvMaxOut): w (O, C, kh, kw) with the output channel
// fastest and zeros past O, so one tap's outputs are one 16-byte load.
DS_HOST_DEVICE inline void narrow_pack_weights_at(int64_t i, const NarrowConv& g, const float* w, float* wp) {
  const int oc = int(i % kNarrowConvMaxOut);
  const int64_t tap = i / kNarrowConvMaxOut, taps = int64_t(g.c) * g.kh * g.kw;
  wp[i] = oc < g.o ? w[oc * taps + tap] : 0.0f;
}

// Forward at output pixel p = (n * oh + i) * ow + j, all O channels:
// y[n, oc, i, j] = (sum over c, a, e ascending of x[n, c, i + a - top, j + e - left] *
// w[oc, c, a, e]) + b[oc], taps in the zero padding skipped; b may be null.
template <int O, typename X = float>
DS_HOST_DEVICE inline void narrow_conv_forward_at(int64_t p, const NarrowConv& g, const X* x, const float* wp,
                                                  const float* b, float* y) {
  const int j = int(p % g.ow), i = int(p / g.ow % g.oh);
  const int64_t n = p / (int64_t(g.ow) * g.oh);
  float acc[O];
  DS_NARROW_UNROLL
  for (int oc = 0; oc < O; ++oc) acc[oc] = 0.0f;
  for (int c = 0; c < g.c; ++c) {
    const X* xc = x + (n * g.c + c) * g.h * g.w;
    for (int a = 0; a < g.kh; ++a) {
      const int r = i + a - g.pad_top;
      if (r < 0 || r >= g.h) continue;
      const float* wr = wp + (int64_t(c) * g.kh + a) * g.kw * kNarrowConvMaxOut;
      for (int e = 0; e < g.kw; ++e) {
        const int q = j + e - g.pad_left;
        if (q < 0 || q >= g.w) continue;
        const float xv = load_act(g.xk, xc, int64_t(r) * g.w + q);
        float wv[4];
        narrow_load4(wr + e * kNarrowConvMaxOut, wv);
        DS_NARROW_UNROLL
        for (int oc = 0; oc < O; ++oc) acc[oc] += xv * wv[oc];
      }
    }
  }
  const int64_t plane = int64_t(g.oh) * g.ow;
  DS_NARROW_UNROLL
  for (int oc = 0; oc < O; ++oc) y[(n * O + oc) * plane + int64_t(i) * g.ow + j] = acc[oc] + (b ? b[oc] : 0.0f);
}

// x row r of one channel plane xc at the window's columns j + e - left, e < kNarrowWindow: zero
// in the padding and for e >= kw (such columns are never accumulated). A row wholly inside x with
// kw = kNarrowWindow (MNN's head: every row but the last strip's, every column) loads its values
// without the per-element tests, which cost about as many integer operations as the forward
// window does multiply-adds with them (28 values for 192 products a channel): the same values.
// narrow_window_row_tested is the element-by-element form, for the edges (and the host test).
template <typename X>
DS_HOST_DEVICE inline void narrow_window_row_tested(const X* xc, const NarrowConv& g, int r, int j, float* row) {
  const bool inside = r >= 0 && r < g.h;
  DS_NARROW_UNROLL
  for (int e = 0; e < kNarrowWindow; ++e) {
    const int q = j + e - g.pad_left;
    row[e] = inside && e < g.kw && q >= 0 && q < g.w ? load_act(g.xk, xc, int64_t(r) * g.w + q) : 0.0f;
  }
}
template <typename X>
DS_HOST_DEVICE inline void narrow_window_row(const X* xc, const NarrowConv& g, int r, int j, float* row) {
  const int q0 = j - g.pad_left;
  if (r >= 0 && r < g.h && g.kw == kNarrowWindow && q0 >= 0 && q0 + kNarrowWindow <= g.w) {
    const int64_t at = int64_t(r) * g.w + q0;
    DS_NARROW_UNROLL
    for (int e = 0; e < kNarrowWindow; ++e) row[e] = load_act(g.xk, xc, at + e);
    return;
  }
  narrow_window_row_tested(xc, g, r, j, row);
}

// Output rows per thread of the window forward.
constexpr int kNarrowStripRows = 4;
DS_HOST_DEVICE inline int narrow_strips(const NarrowConv& g) { return (g.oh + kNarrowStripRows - 1) / kNarrowStripRows; }

// Forward on the window path (g.window: kh, kw <= kNarrowWindow) at t = (n * strips + strip) *
// ow + j: output column j of kNarrowStripRows output rows from i0 = strip * kNarrowStripRows, all O
// channels. Per input channel the thread loads the kNarrowStripRows + kNarrowWindow - 1 input rows
// under its taps once (kw values each) and reuses them for every row of the strip, where
// narrow_conv_forward_at loads kh * kw values per output pixel (1.75 ms for the head at batch 32
// on an H100, cuDNN 1.45 ms). Same sum as narrow_conv_forward_at: c, a, e ascending, then + b.
template <int O, typename X = float>
DS_HOST_DEVICE inline void narrow_conv_forward_window_at(int64_t t, const NarrowConv& g, const X* x,
                                                         const float* wp, const float* b, float* y) {
  constexpr int K = kNarrowWindow, R = kNarrowStripRows, RK = R + K - 1;
  const int strips = narrow_strips(g);
  const int j = int(t % g.ow), i0 = int(t / g.ow % strips) * R;
  const int64_t n = t / (int64_t(g.ow) * strips);
  float acc[R * O];
  DS_NARROW_UNROLL
  for (int k = 0; k < R * O; ++k) acc[k] = 0.0f;
  for (int c = 0; c < g.c; ++c) {
    const X* xc = x + (n * g.c + c) * int64_t(g.h) * g.w;
    float win[RK * K];  // win[s * K + e] = x[n, c, i0 + s - top, j + e - left]
    DS_NARROW_UNROLL
    for (int s = 0; s < RK; ++s) narrow_window_row(xc, g, i0 + s - g.pad_top, j, win + s * K);
    const float* wc = wp + int64_t(c) * g.kh * g.kw * kNarrowConvMaxOut;
    DS_NARROW_UNROLL
    for (int a = 0; a < K; ++a) {
      if (a >= g.kh) break;
      DS_NARROW_UNROLL
      for (int e = 0; e < K; ++e) {
        if (e >= g.kw) break;
        float wv[4];
        narrow_load4(wc + (a * g.kw + e) * kNarrowConvMaxOut, wv);
        DS_NARROW_UNROLL
        for (int r = 0; r < R; ++r) {
          DS_NARROW_UNROLL
          for (int oc = 0; oc < O; ++oc) acc[r * O + oc] += win[(r + a) * K + e] * wv[oc];
        }
      }
    }
  }
  const int64_t plane = int64_t(g.oh) * g.ow;
  DS_NARROW_UNROLL
  for (int r = 0; r < R; ++r) {
    const int i = i0 + r;
    if (i >= g.oh) break;
    DS_NARROW_UNROLL
    for (int oc = 0; oc < O; ++oc) y[(n * O + oc) * plane + int64_t(i) * g.ow + j] = acc[r * O + oc] + (b ? b[oc] : 0.0f);
  }
}

// Backward data on the window path (g.window) at t = ((n * groups + group) * strips_in + strip) *
// w + j, strips_in = ceil(h / kNarrowStripRows): input column j of kNarrowStripRows input rows
// from i0 = strip * kNarrowStripRows, for the group's channels. Per output channel oc the thread
// loads the dy values under its taps once (kNarrowStripRows + kNarrowWindow - 1 rows x kw
// columns) and reuses them for every row and channel, where narrow_conv_backward_data_at loads
// O dy values per tap and pixel (0.94 ms for the head at batch 32 on an H100).
// dx[n, c, i, j] = sum over oc, then a, e ascending of dy[n, oc, i + top - a, j + left - e] *
// w[oc, c, a, e], outputs outside dy skipped. Window slot s holds dy row i0 + top - (K - 1) + s,
// so row r's tap a reads slot r + K - 1 - a (a constant once the loops are unrolled).
DS_HOST_DEVICE inline int narrow_input_strips(const NarrowConv& g) { return (g.h + kNarrowStripRows - 1) / kNarrowStripRows; }

template <int O>
DS_HOST_DEVICE inline void narrow_conv_backward_data_window_at(int64_t t, const NarrowConv& g, const float* dy,
                                                               const float* wp, float* dx) {
  constexpr int K = kNarrowWindow, R = kNarrowStripRows, RK = R + K - 1, G = kNarrowChannelGroup;
  const int strips = narrow_input_strips(g);
  const int j = int(t % g.w), i0 = int(t / g.w % strips) * R;
  const int group = int(t / (int64_t(g.w) * strips) % g.groups);
  const int64_t n = t / (int64_t(g.w) * strips * g.groups);
  const int c0 = group * G;
  const int64_t plane = int64_t(g.oh) * g.ow;
  float acc[R * G];
  DS_NARROW_UNROLL
  for (int k = 0; k < R * G; ++k) acc[k] = 0.0f;
  DS_NARROW_UNROLL
  for (int oc = 0; oc < O; ++oc) {
    const float* dyo = dy + (n * O + oc) * plane;
    float win[RK * K];  // win[s * K + e] = dy[n, oc, i0 + top - (K - 1) + s, j + left - e]
    DS_NARROW_UNROLL
    for (int s = 0; s < RK; ++s) {
      const int r = i0 + g.pad_top - (K - 1) + s;
      DS_NARROW_UNROLL
      for (int e = 0; e < K; ++e) {
        const int q = j + g.pad_left - e;
        win[s * K + e] = r >= 0 && r < g.oh && e < g.kw && q >= 0 && q < g.ow ? dyo[int64_t(r) * g.ow + q] : 0.0f;
      }
    }
    DS_NARROW_UNROLL
    for (int cc = 0; cc < G; ++cc) {
      const int c = c0 + cc;
      if (c >= g.c) break;
      const float* wc = wp + int64_t(c) * g.kh * g.kw * kNarrowConvMaxOut + oc;
      DS_NARROW_UNROLL
      for (int a = 0; a < K; ++a) {
        if (a >= g.kh) break;
        DS_NARROW_UNROLL
        for (int e = 0; e < K; ++e) {
          if (e >= g.kw) break;
          const float wv = wc[(a * g.kw + e) * kNarrowConvMaxOut];
          DS_NARROW_UNROLL
          for (int r = 0; r < R; ++r) acc[r * G + cc] += win[(r + K - 1 - a) * K + e] * wv;
        }
      }
    }
  }
  DS_NARROW_UNROLL
  for (int r = 0; r < R; ++r) {
    const int i = i0 + r;
    if (i >= g.h) break;
    DS_NARROW_UNROLL
    for (int cc = 0; cc < G; ++cc) {
      const int c = c0 + cc;
      if (c >= g.c) break;
      dx[((n * g.c + c) * g.h + i) * g.w + j] = acc[r * G + cc];
    }
  }
}

// Backward data at t = ((n * groups + group) * h + i) * w + j: the input gradient of pixel (i, j)
// for the channels c of the group, dx[n, c, i, j] = sum over a, e, oc ascending of
// dy[n, oc, i + top - a, j + left - e] * w[oc, c, a, e], outputs outside dy skipped (the dy
// values are loaded once for the group's channels).
template <int O>
DS_HOST_DEVICE inline void narrow_conv_backward_data_at(int64_t t, const NarrowConv& g, const float* dy,
                                                        const float* wp, float* dx) {
  const int j = int(t % g.w), i = int(t / g.w % g.h);
  const int group = int(t / (int64_t(g.w) * g.h) % g.groups);
  const int64_t n = t / (int64_t(g.w) * g.h * g.groups);
  const int c0 = group * kNarrowChannelGroup;
  const int64_t plane = int64_t(g.oh) * g.ow;
  float acc[kNarrowChannelGroup];
  DS_NARROW_UNROLL
  for (int cc = 0; cc < kNarrowChannelGroup; ++cc) acc[cc] = 0.0f;
  for (int a = 0; a < g.kh; ++a) {
    const int r = i + g.pad_top - a;
    if (r < 0 || r >= g.oh) continue;
    for (int e = 0; e < g.kw; ++e) {
      const int q = j + g.pad_left - e;
      if (q < 0 || q >= g.ow) continue;
      float d[O];
      DS_NARROW_UNROLL
      for (int oc = 0; oc < O; ++oc) d[oc] = dy[(n * O + oc) * plane + int64_t(r) * g.ow + q];
      DS_NARROW_UNROLL
      for (int cc = 0; cc < kNarrowChannelGroup; ++cc) {
        const int c = c0 + cc;
        if (c >= g.c) break;
        float wv[4];
        narrow_load4(wp + ((int64_t(c) * g.kh + a) * g.kw + e) * kNarrowConvMaxOut, wv);
        DS_NARROW_UNROLL
        for (int oc = 0; oc < O; ++oc) acc[cc] += d[oc] * wv[oc];
      }
    }
  }
  DS_NARROW_UNROLL
  for (int cc = 0; cc < kNarrowChannelGroup; ++cc) {
    const int c = c0 + cc;
    if (c >= g.c) break;
    dx[((n * g.c + c) * g.h + i) * g.w + j] = acc[cc];
  }
}

// Sums 32 lanes' values into lane 0 as a warp's shuffle-down tree does: offsets 16, 8, 4, 2, 1,
// v[l] += v[l + offset]. The host form of the GPU reduction, for the tests.
DS_HOST_DEVICE inline float narrow_lane_tree_sum(float* v) { return lane_tree_sum(v); }

// Weight-gradient partial, one lane's share. t = ((((chunk * groups + group) * kh + a) * kw + e)
// * 32 + lane): for the tap (a, e), the group's channels cc and every output channel oc,
// acc[cc * 4 + oc] = sum over the chunk's rows (n, i) ascending, then columns j = lane, lane + 32,
// ... of dy[n, oc, i, j] * x[n, c, i + a - top, j + e - left] (zero in the padding).
// The 32 lanes' values then sum by narrow_lane_tree_sum's tree into partial[u * 32 + cc * 4 + oc]
// with u = t / 32 (8 channels x 4 outputs per partial); acc has kNarrowChannelGroup * 4 floats.
// Warps of a block are consecutive taps of one (chunk, group): they read the same x rows and dy.
template <int O, typename X = float>
DS_HOST_DEVICE inline void narrow_conv_weight_lane(int64_t t, const NarrowConv& g, const X* x, const float* dy,
                                                   float* acc) {
  const int lane = int(t % kNarrowLanes);
  const int64_t u = t / kNarrowLanes;
  const int e = int(u % g.kw), a = int(u / g.kw % g.kh);
  const int group = int(u / (int64_t(g.kw) * g.kh) % g.groups);
  const int chunk = int(u / (int64_t(g.kw) * g.kh * g.groups));
  const int c0 = group * kNarrowChannelGroup;
  DS_NARROW_UNROLL
  for (int k = 0; k < kNarrowChannelGroup * kNarrowConvMaxOut; ++k) acc[k] = 0.0f;
  const int64_t rows = int64_t(g.n) * g.oh, plane = int64_t(g.oh) * g.ow, in_plane = int64_t(g.h) * g.w;
  const int64_t first = int64_t(chunk) * g.chunk_rows;
  const int64_t last = first + g.chunk_rows < rows ? first + g.chunk_rows : rows;
  for (int64_t row = first; row < last; ++row) {
    const int64_t n = row / g.oh;
    const int i = int(row % g.oh), r = i + a - g.pad_top;
    if (r < 0 || r >= g.h) continue;  // the whole row reads padding: adds nothing
    for (int j = lane; j < g.ow; j += kNarrowLanes) {
      const int q = j + e - g.pad_left;
      if (q < 0 || q >= g.w) continue;
      float d[O];
      DS_NARROW_UNROLL
      for (int oc = 0; oc < O; ++oc) d[oc] = dy[(n * O + oc) * plane + int64_t(i) * g.ow + j];
      DS_NARROW_UNROLL
      for (int cc = 0; cc < kNarrowChannelGroup; ++cc) {
        const int c = c0 + cc;
        if (c >= g.c) break;
        const float xv = load_act(g.xk, x, (n * g.c + c) * in_plane + int64_t(r) * g.w + q);
        DS_NARROW_UNROLL
        for (int oc = 0; oc < O; ++oc) acc[cc * kNarrowConvMaxOut + oc] += d[oc] * xv;
      }
    }
  }
}

// dw[oc, c, a, e] (index i of O x C x kh x kw): the chunks' partials summed in chunk order.
DS_HOST_DEVICE inline void narrow_conv_weight_finish_at(int64_t i, const NarrowConv& g, const float* partial,
                                                        float* dw) {
  const int e = int(i % g.kw), a = int(i / g.kw % g.kh), c = int(i / (int64_t(g.kw) * g.kh) % g.c);
  const int oc = int(i / (int64_t(g.kw) * g.kh * g.c));
  const int group = c / kNarrowChannelGroup, cc = c % kNarrowChannelGroup;
  const int64_t slot = int64_t(cc) * kNarrowConvMaxOut + oc;
  float s = 0.0f;
  for (int chunk = 0; chunk < g.chunks; ++chunk) {
    const int64_t u = ((int64_t(chunk) * g.groups + group) * g.kh + a) * g.kw + e;
    s += partial[u * kNarrowChannelGroup * kNarrowConvMaxOut + slot];
  }
  dw[i] = s;
}

// Weight-gradient partial by sliding window (g.window: kh, kw <= kNarrowWindow), one lane's
// share. t = ((n * c + ch) * col_blocks + cb) * 32 + lane: the lane owns output column
// j = cb * 32 + lane of image n and input channel ch, and walks down the output rows keeping the
// kh x kw input values under its taps in registers, so each row step loads kw new x values and O
// dy values for kh * kw * O products (the per-tap path loads 11 values for 24 products and reads
// x once per tap; on an H100 it took 4.7 ms for the head at batch 32).
// Window row slot s holds input row i + s - (kNarrowWindow - kh) - top, tap a = s - (kNarrowWindow
// - kh): the new row always goes into the last slot, so every register index is a constant.
// acc[(s * kNarrowWindow + e) * 4 + oc] = sum over output rows i ascending of dy[n, oc, i, j] *
// x[n, ch, i + a - top, j + e - left] (zero in the padding; all zero for j >= ow). The 32 lanes
// then sum by narrow_lane_tree_sum's tree into partial[u * kNarrowWindowSlots + slot], u = t / 32.
template <int O, typename X = float>
DS_HOST_DEVICE inline void narrow_conv_weight_window_lane(int64_t t, const NarrowConv& g, const X* x,
                                                          const float* dy, float* acc) {
  constexpr int K = kNarrowWindow;
  const int lane = int(t % kNarrowLanes);
  const int64_t u = t / kNarrowLanes;
  const int cb = int(u % g.col_blocks), ch = int(u / g.col_blocks % g.c);
  const int64_t n = u / (int64_t(g.col_blocks) * g.c);
  DS_NARROW_UNROLL
  for (int k = 0; k < kNarrowWindowSlots; ++k) acc[k] = 0.0f;
  const int j = cb * kNarrowLanes + lane;
  if (j >= g.ow) return;
  const X* xc = x + (n * g.c + ch) * int64_t(g.h) * g.w;
  const int64_t plane = int64_t(g.oh) * g.ow;
  const float* dyj = dy + n * O * plane + j;
  const int unused = K - g.kh;  // leading slots no tap reads
  float win[K * K];
  // Before row 0: slots 1..K-1 hold the rows of "row -1" (slot 0 is shifted out first).
  DS_NARROW_UNROLL
  for (int s = 1; s < K; ++s) narrow_window_row(xc, g, s - 1 - unused - g.pad_top, j, win + s * K);
  for (int i = 0; i < g.oh; ++i) {
    DS_NARROW_UNROLL
    for (int s = 0; s + 1 < K; ++s) {
      DS_NARROW_UNROLL
      for (int e = 0; e < K; ++e) win[s * K + e] = win[(s + 1) * K + e];
    }
    narrow_window_row(xc, g, i + g.kh - 1 - g.pad_top, j, win + (K - 1) * K);
    float d[O];
    DS_NARROW_UNROLL
    for (int oc = 0; oc < O; ++oc) d[oc] = dyj[oc * plane + int64_t(i) * g.ow];
    DS_NARROW_UNROLL
    for (int s = 0; s < K; ++s) {
      if (s < unused) continue;
      DS_NARROW_UNROLL
      for (int e = 0; e < K; ++e) {
        if (e >= g.kw) continue;
        DS_NARROW_UNROLL
        for (int oc = 0; oc < O; ++oc) acc[(s * K + e) * kNarrowConvMaxOut + oc] += d[oc] * win[s * K + e];
      }
    }
  }
}

// Whether window partial slot s = (row slot * kNarrowWindow + e) * 4 + oc holds a real tap and
// output channel: only those are summed over the lanes and written (the others are never read).
DS_HOST_DEVICE inline bool narrow_window_slot_used(int s, const NarrowConv& g) {
  const int row = s / (kNarrowWindow * kNarrowConvMaxOut), e = s / kNarrowConvMaxOut % kNarrowWindow;
  return s % kNarrowConvMaxOut < g.o && row >= kNarrowWindow - g.kh && e < g.kw;
}

// dw[oc, c, a, e] (index i of O x C x kh x kw) on the window path: the partials of (n, column
// block) summed with n, then the column block, ascending.
DS_HOST_DEVICE inline void narrow_conv_weight_window_finish_at(int64_t i, const NarrowConv& g, const float* partial,
                                                               float* dw) {
  const int e = int(i % g.kw), a = int(i / g.kw % g.kh), c = int(i / (int64_t(g.kw) * g.kh) % g.c);
  const int oc = int(i / (int64_t(g.kw) * g.kh * g.c));
  const int slot = ((a + kNarrowWindow - g.kh) * kNarrowWindow + e) * kNarrowConvMaxOut + oc;
  float s = 0.0f;
  for (int64_t n = 0; n < g.n; ++n)
    for (int cb = 0; cb < g.col_blocks; ++cb)
      s += partial[((n * g.c + c) * g.col_blocks + cb) * kNarrowWindowSlots + slot];
  dw[i] = s;
}

// Bias-gradient partial, one lane's share. t = bias_chunk * 32 + lane: acc[oc] = sum over the
// chunk's kNarrowBiasChunkRows rows (n, i) ascending, then columns j = lane, lane + 32, ... of
// dy[n, oc, i, j]; the lanes sum by the tree into partial[bias_chunk * 4 + oc].
template <int O>
DS_HOST_DEVICE inline void narrow_conv_bias_lane(int64_t t, const NarrowConv& g, const float* dy, float* acc) {
  const int lane = int(t % kNarrowLanes);
  const int64_t chunk = t / kNarrowLanes, rows = int64_t(g.n) * g.oh, plane = int64_t(g.oh) * g.ow;
  DS_NARROW_UNROLL
  for (int oc = 0; oc < kNarrowConvMaxOut; ++oc) acc[oc] = 0.0f;
  const int64_t first = chunk * kNarrowBiasChunkRows;
  const int64_t last = first + kNarrowBiasChunkRows < rows ? first + kNarrowBiasChunkRows : rows;
  for (int64_t row = first; row < last; ++row) {
    const int64_t n = row / g.oh, i = row % g.oh;
    for (int j = lane; j < g.ow; j += kNarrowLanes) {
      DS_NARROW_UNROLL
      for (int oc = 0; oc < O; ++oc) acc[oc] += dy[(n * O + oc) * plane + i * g.ow + j];
    }
  }
}

// db[oc]: the bias partials summed in chunk order.
DS_HOST_DEVICE inline void narrow_conv_bias_finish_at(int oc, const NarrowConv& g, const float* partial, float* db) {
  float s = 0.0f;
  for (int chunk = 0; chunk < g.bias_chunks; ++chunk) s += partial[int64_t(chunk) * kNarrowConvMaxOut + oc];
  db[oc] = s;
}

}  // namespace ds::model::kernels
