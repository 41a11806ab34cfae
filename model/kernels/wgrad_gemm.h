// A convolution's weight gradient as matrix products (the CUDA backend's alternative to cuDNN's
// backward-filter pass, model/cuda/cuda_wgrad_gemm.cu):
//
//   dW (O x K) = sum over samples n of dY_n (O x P) . col_n^T (P x K)
//
// with K = C * kh * kw (OIHW's row length, so dW is the weight layout itself), P = out_h * out_w,
// dY_n the output gradient of sample n (NCHW: already O x P row-major) and col_n the input
// unrolled (im2col): col_n[(c * kh + i) * kw + j][oy * out_w + ox] = x[n, c, oy*s + i - pad_top,
// ox*s + j - pad_left], 0 outside the input. Why: on an H100 (2026-11-23) MNN's largest
// convolution (the 100 -> 528 channel 5x5 polyphase on 60 x 106) spent 6.02 ms of a 27.8 ms TF32
// step in cuDNN's backward filter, 89 TFLOP/s, against 2.83 ms for its forward; a TF32 GEMM of
// those sizes runs nearer cuBLAS's peak, and the unrolled input costs one write and one read.
//
// In the 16-bit modes (bf16, fp16) the unrolling also rounds (col in 16 bits, half the bytes), dY
// is the pass's rounded copy, and the GEMM multiplies 16-bit operands into FP32 sums, as cuDNN's
// 16-bit filter pass does; the 1x1 case is unrolled too (x is FP32, or a 16-bit activation).
//
// NHWC (`nhwc`: the 16-bit layout of BF16's default, where dY's rounded copy is NHWC): col_n is
// unrolled pixel-major and channel-fastest, col_n[oy * out_w + ox][(i * kw + j) * c + ch] (P x K
// row-major: consecutive threads write consecutive elements and, from an NHWC x, read
// consecutive channels), and the GEMM reads dY_n as the P x O row-major matrix it is:
// dW (O x K) = dY_n^T . col_n, in OHWI (K in (i, j, c) order), transposed once into OIHW
// (ohwi_to_oihw_at). On an H200 (2026-11-29) cuDNN's BF16 NHWC filter pass of MNN's 50 -> 25
// branch convolutions took 0.41-0.52 ms, against 0.09-0.16 for the TF32 GEMM or FFT. x, the
// unrolling's source, is read where it is (im2col_at, sample_offset): FP32 NCHW, or a 16-bit
// activation in NCHW or NHWC.
//
// Samples go in chunks of `per_chunk` (the unrolled input of a chunk must fit the budget): each
// chunk is one strided-batched GEMM, sample j of a chunk accumulating into partial j (beta 1 after
// the first chunk), then the partials are added in order (sum_partials_at). No atomics: the same
// result every run. With one sample per chunk dW is accumulated directly. A 1x1 convolution with
// stride 1 and no padding needs no unrolling: col_n is x_n itself.
//
// The schedule and the GEMM's arguments are computed here, once, for the CUDA launch and for
// tests/model/wgrad_gemm_test.cpp, which runs the same schedule with a host GEMM of cuBLAS's
// column-major semantics against the CPU backend's weight gradient.
#pragma once
#include <cstdint>

#include "model/host_device.h"

namespace ds::model::kernels {

struct WgradGemm {
  // Geometry: input (c, h, w) per sample, kernel kh x kw, stride, top/left padding, output plane.
  int n = 0, c = 0, h = 0, w = 0, kh = 1, kw = 1, stride = 1, pad_top = 0, pad_left = 0;
  int out_c = 0, out_h = 0, out_w = 0;
  int64_t rows = 0;    // K = c * kh * kw
  int64_t pixels = 0;  // P = out_h * out_w
  bool direct = false;  // 1x1, stride 1, no padding, FP32 NCHW: col_n = x_n, no unrolling
  int col_bytes = 4;    // bytes of an element of col (and of dY as the GEMM reads it): 4, or 2 in 16 bits
  bool nhwc = false;    // dY NHWC (16 bits), col pixel-major: see above
  int per_chunk = 1;    // samples per GEMM call (and partials)
  int chunks = 1;
};

// budget_bytes bounds what one chunk needs besides dY and x: its unrolled input (unless direct)
// and its FP32 partials (unless one sample a chunk). col_bytes: 4 (FP32 operands) or 2 (16-bit).
inline WgradGemm make_wgrad_gemm(int n, int c, int h, int w, int kh, int kw, int stride, int pad_top, int pad_left,
                                 int out_c, int out_h, int out_w, int64_t budget_bytes, int col_bytes = 4,
                                 bool nhwc = false) {
  WgradGemm g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.kh = kh, g.kw = kw, g.stride = stride;
  g.pad_top = pad_top, g.pad_left = pad_left, g.out_c = out_c, g.out_h = out_h, g.out_w = out_w;
  g.col_bytes = col_bytes;
  g.nhwc = nhwc;
  g.rows = int64_t(c) * kh * kw;
  g.pixels = int64_t(out_h) * out_w;
  g.direct = col_bytes == 4 && !nhwc && kh == 1 && kw == 1 && stride == 1 && pad_top == 0 && pad_left == 0 &&
             out_h == h && out_w == w;
  const int64_t per_sample = (g.direct ? 0 : g.rows * g.pixels * col_bytes) + g.rows * out_c * 4;
  int64_t per = per_sample > 0 ? budget_bytes / per_sample : n;
  if (per > n) per = n;
  if (per < 1) per = 1;
  g.per_chunk = int(per);
  g.chunks = n > 0 ? int((n + per - 1) / per) : 0;
  return g;
}

// Elements of the unrolled input of one chunk (0 when direct; col_bytes each) and floats of the
// partials (0 with one sample a chunk: dW is the accumulator).
inline int64_t wgrad_col_elements(const WgradGemm& g) {
  return g.direct ? 0 : int64_t(g.per_chunk) * g.rows * g.pixels;
}
inline int64_t wgrad_partial_floats(const WgradGemm& g) {
  return g.per_chunk > 1 ? int64_t(g.per_chunk) * g.rows * g.out_c : 0;
}

// One strided-batched GEMM in cuBLAS's column-major terms, C_b = op(A_b) op(B_b) + beta C_b for
// b < batch, C_b (m x n, ldc) dW^T as K x O column-major, which is dW row-major (O x K), the
// OIHW layout. NCHW: op(A) = A^T, A_b (k x m, lda P) col_n read as the P x K column-major matrix
// it is in memory; op(B) = B, B_b (k x n, ldb P) dY_n as P x O column-major. NHWC: op(A) = A,
// A_b (m x k, lda K) col_n as K x P column-major; op(B) = B^T, B_b (n x k, ldb O) dY_n as O x P
// column-major. Offsets in elements from the buffers named.
struct WgradGemmCall {
  int m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0, batch = 0;
  bool a_transposed = true, b_transposed = false;  // cuBLAS's transa/transb: T, or N
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  int64_t a_offset = 0;  // into col (or into x when direct)
  int64_t b_offset = 0;  // into dY
  bool accumulate = false;  // beta 1 (else 0)
};

inline WgradGemmCall wgrad_gemm_call(const WgradGemm& g, int chunk) {
  WgradGemmCall call;
  const int first = chunk * g.per_chunk;
  const int left = g.n - first;
  call.m = int(g.rows);
  call.n = g.out_c;
  call.k = int(g.pixels);
  call.lda = int(g.nhwc ? g.rows : g.pixels);
  call.ldb = int(g.nhwc ? g.out_c : g.pixels);
  call.a_transposed = !g.nhwc;
  call.b_transposed = g.nhwc;
  call.ldc = int(g.rows);
  call.batch = left < g.per_chunk ? left : g.per_chunk;
  call.stride_a = g.rows * g.pixels;  // col_n, or x_n when direct (rows = c, pixels = h * w)
  call.stride_b = int64_t(g.out_c) * g.pixels;
  call.stride_c = g.per_chunk > 1 ? g.rows * g.out_c : 0;  // one sample a chunk: dW itself
  call.a_offset = g.direct ? int64_t(first) * g.rows * g.pixels : 0;
  call.b_offset = int64_t(first) * g.out_c * g.pixels;
  call.accumulate = chunk > 0;
  return call;
}

// Which channel and tap row `row` of col reads: row (c * kh + i) * kw + j, or in NHWC
// (i * kw + j) * c + ch.
struct Im2colRow {
  int c = 0, i = 0, j = 0;
};
DS_HOST_DEVICE inline Im2colRow im2col_row(const WgradGemm& g, int64_t row) {
  Im2colRow r;
  if (g.nhwc) {
    const int64_t tap = row / g.c;
    r.c = int(row - tap * g.c);
    r.i = int(tap / g.kw);
    r.j = int(tap - int64_t(r.i) * g.kw);
    return r;
  }
  const int taps = g.kh * g.kw;
  r.c = int(row / taps);
  const int t = int(row - int64_t(r.c) * taps);
  r.i = t / g.kw;
  r.j = t - r.i * g.kw;
  return r;
}

// The input coordinates (y, x) row r reads at output pixel pix; false where the window lies on
// the padding (the value is 0).
DS_HOST_DEVICE inline bool im2col_at(const WgradGemm& g, const Im2colRow& r, int pix, int& y, int& x) {
  const int oy = pix / g.out_w, ox = pix - oy * g.out_w;
  y = oy * g.stride + r.i - g.pad_top;
  x = ox * g.stride + r.j - g.pad_left;
  return y >= 0 && y < g.h && x >= 0 && x < g.w;
}


// Element e of a chunk's unrolled input in the NHWC order (sample, pixel, row): which sample,
// row and pixel it holds.
struct Im2colNhwcAt {
  int64_t sample = 0, row = 0;
  int pix = 0;
};
DS_HOST_DEVICE inline Im2colNhwcAt im2col_nhwc_at(const WgradGemm& g, int64_t e) {
  Im2colNhwcAt a;
  const int64_t per_sample = g.pixels * g.rows;
  a.sample = e / per_sample;
  const int64_t rest = e - a.sample * per_sample;
  a.pix = int(rest / g.rows);
  a.row = rest - int64_t(a.pix) * g.rows;
  return a;
}

// Offset of element (c, y, x) in one sample of x stored NHWC (else NCHW).
DS_HOST_DEVICE inline int64_t sample_offset(const WgradGemm& g, int c, int y, int x, bool x_nhwc) {
  return x_nhwc ? (int64_t(y) * g.w + x) * g.c + c : (int64_t(c) * g.h + y) * g.w + x;
}

// Element (row r, pixel pix) of sample `sample`'s unrolling: x at the window's tap, 0 on the
// padding. src(i) gives x's element i (counted from the chunk's first sample) as a float.
template <typename Source>
DS_HOST_DEVICE inline float im2col_value(const WgradGemm& g, const Source& src, bool x_nhwc, int64_t sample,
                                         const Im2colRow& r, int pix) {
  int y = 0, x = 0;
  if (!im2col_at(g, r, pix, y, x)) return 0.0f;
  return src(sample * g.c * int64_t(g.h) * g.w + sample_offset(g, r.c, y, x, x_nhwc));
}

// NHWC: element e of dW in OIHW from the GEMM's OHWI result.
DS_HOST_DEVICE inline void ohwi_to_oihw_at(int64_t e, const WgradGemm& g, const float* ohwi, float* oihw) {
  const int64_t taps = int64_t(g.kh) * g.kw, per_o = taps * g.c;
  const int64_t o = e / per_o, rest = e - o * per_o, c = rest / taps, t = rest - c * taps;
  oihw[e] = ohwi[o * per_o + t * g.c + c];
}

// dw[e] = partial 0 + partial 1 + ... in that order (each partial `stride` floats apart).
DS_HOST_DEVICE inline void sum_partials_at(int64_t e, int parts, int64_t stride, const float* partial, float* dw) {
  float s = 0.0f;
  for (int j = 0; j < parts; ++j) s += partial[int64_t(j) * stride + e];
  dw[e] = s;
}

}  // namespace ds::model::kernels
