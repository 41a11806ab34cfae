// The weight gradient by im2col + GEMM (model/kernels/wgrad_gemm.h, run by the CUDA backend's
// cuda_wgrad_gemm.cu) on the CPU: the same schedule (chunks, partials), the same GEMM arguments
// handed to a host GEMM with cuBLAS's column-major strided-batched semantics
// (C_b = A_b^T B_b + beta C_b), the unrolling body, and the partials' sum body, against the
// double-precision convolution of conv_reference.h.
//
// Tolerance 1e-5 of the largest |dw|: each GEMM element is summed in double here and rounded once,
// then at most a few float additions (chunks, partials) of values of that size follow, about
// 1e-7 relative; a wrong tap, sample, offset or stride moves elements by O(|x dy|) terms, 0.1 or
// more of the scale. Caught when tried: partials all at one address (stride_c 0), the left
// padding read as the top one, chunks not accumulated, the first partial left out of the sum.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "conv_reference.h"
#include "model/backend.h"
#include "model/kernels/half_cast.h"
#include "model/kernels/wgrad_gemm.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

namespace k = kernels;

// cublasGemmStridedBatchedEx with FP32 data and the call's transa/transb, on the host.
void host_gemm(const k::WgradGemmCall& c, const float* a, const float* b, float* out) {
  for (int bi = 0; bi < c.batch; ++bi) {
    const float* ab = a + bi * c.stride_a;
    const float* bb = b + bi * c.stride_b;
    float* cb = out + bi * c.stride_c;
    for (int j = 0; j < c.n; ++j)
      for (int i = 0; i < c.m; ++i) {
        double s = 0;
        for (int l = 0; l < c.k; ++l) {
          const float av = c.a_transposed ? ab[l + int64_t(i) * c.lda] : ab[i + int64_t(l) * c.lda];
          const float bv = c.b_transposed ? bb[j + int64_t(l) * c.ldb] : bb[l + int64_t(j) * c.ldb];
          s += double(av) * bv;
        }
        float& dst = cb[i + int64_t(j) * c.ldc];
        dst = float(s + (c.accumulate ? double(dst) : 0.0));
      }
  }
}

// An NCHW tensor's values in NHWC order.
std::vector<float> to_nhwc(const Shape& s, const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (int n = 0; n < s.n; ++n)
    for (int c = 0; c < s.c; ++c)
      for (int y = 0; y < s.h; ++y)
        for (int x = 0; x < s.w; ++x)
          out[size_t(((int64_t(n) * s.h + y) * s.w + x) * s.c + c)] = v[size_t(((int64_t(n) * s.c + c) * s.h + y) * s.w + x)];
  return out;
}

// dw as cuda_wgrad_gemm.cu computes it: per chunk, unroll (unless direct) and one batched GEMM;
// then the partials summed.
// half: the 16-bit modes, where the unrolling rounds each value and the GEMM reads dY's rounded
// copy (both held here as the floats the 16-bit values stand for). nhwc: dY's copy NHWC and the
// unrolling pixel-major; x_nhwc: x a 16-bit activation stored NHWC (else NCHW as given).
std::vector<float> wgrad_on_host(const ConvDesc& d, const std::vector<float>& x_nchw, std::vector<float> dy,
                                 int64_t budget_bytes, k::WgradGemm* schedule = nullptr,
                                 const k::Half16* half = nullptr, bool nhwc = false, bool x_nhwc = false) {
  const Shape o = d.out();
  const k::WgradGemm g = k::make_wgrad_gemm(d.in.n, d.in.c, d.in.h, d.in.w, d.kh, d.kw, d.stride, d.pad_top,
                                            d.pad_left, d.out_c, o.h, o.w, budget_bytes, half ? 2 : 4, nhwc);
  const auto round = [&](float v) { return half ? k::from_half16(*half, k::to_half16(*half, v)) : v; };
  for (float& v : dy) v = round(v);
  if (nhwc) dy = to_nhwc(o, dy);
  std::vector<float> x = x_nhwc ? to_nhwc(d.in, x_nchw) : x_nchw;
  if (x_nhwc)
    for (float& v : x) v = round(v);  // a 16-bit activation holds rounded values
  if (schedule) *schedule = g;
  const int64_t nw = g.rows * g.out_c, sample_size = int64_t(g.c) * g.h * g.w;
  std::vector<float> dw(size_t(nw), std::nanf(""));
  std::vector<float> col(size_t(k::wgrad_col_elements(g)), std::nanf(""));
  std::vector<float> partial(size_t(k::wgrad_partial_floats(g)), std::nanf(""));
  for (int chunk = 0; chunk < g.chunks; ++chunk) {
    const k::WgradGemmCall c = k::wgrad_gemm_call(g, chunk);
    const float* a = x.data() + c.a_offset;
    if (!g.direct) {
      const float* xs = x.data() + int64_t(chunk) * g.per_chunk * sample_size;
      const auto src = [xs](int64_t i) { return xs[i]; };
      if (g.nhwc) {
        for (int64_t e = 0; e < int64_t(c.batch) * g.pixels * g.rows; ++e) {
          const k::Im2colNhwcAt at = k::im2col_nhwc_at(g, e);
          col[size_t(e)] = round(k::im2col_value(g, src, x_nhwc, at.sample, k::im2col_row(g, at.row), at.pix));
        }
      } else {
        for (int64_t plane = 0; plane < int64_t(c.batch) * g.rows; ++plane) {
          const int64_t sample = plane / g.rows;
          const k::Im2colRow r = k::im2col_row(g, plane - sample * g.rows);
          for (int pix = 0; pix < g.pixels; ++pix)
            col[size_t(plane * g.pixels + pix)] = round(k::im2col_value(g, src, x_nhwc, sample, r, pix));
        }
      }
      a = col.data();
    }
    host_gemm(c, a, dy.data() + c.b_offset, partial.empty() ? dw.data() : partial.data());
  }
  if (!partial.empty())
    for (int64_t e = 0; e < nw; ++e) k::sum_partials_at(e, g.per_chunk, nw, partial.data(), dw.data());
  if (g.nhwc) {  // the GEMM's OHWI, transposed into OIHW
    std::vector<float> oihw(dw.size(), std::nanf(""));
    for (int64_t e = 0; e < nw; ++e) k::ohwi_to_oihw_at(e, g, dw.data(), oihw.data());
    return oihw;
  }
  return dw;
}

TEST(WgradGemm, MatchesTheDirectConvolutionForEveryScheduleAndGeometry) {
  using test::conv_desc;
  const ConvDesc cases[] = {
      conv_desc({5, 3, 9, 11}, 4, 5, 5, 1, 2, 2, 2, 2),    // 'same', odd kernel (MNN's branches, the polyphase 5x5)
      conv_desc({5, 2, 8, 7}, 3, 4, 4, 1, 1, 2, 1, 2),     // Keras 'same' with an even kernel: one more bottom/right
      conv_desc({5, 3, 9, 10}, 2, 3, 3, 2, 1, 1, 1, 1),    // stride 2 (ResNet's downsampling 3x3)
      conv_desc({5, 2, 7, 9}, 3, 3, 3, 1, 0, 0, 0, 0),     // 'valid'
      conv_desc({5, 6, 5, 4}, 7, 1, 1, 1, 0, 0, 0, 0),     // 1x1: x is its own unrolling (direct)
      conv_desc({5, 4, 7, 8}, 3, 1, 1, 2, 0, 0, 0, 0),     // 1x1 with stride 2: unrolled
      conv_desc({5, 2, 6, 9}, 3, 1, 7, 1, 0, 0, 3, 3),     // Inception's 1x7
      conv_desc({5, 3, 4, 4}, 2, 7, 7, 2, 3, 3, 3, 3)};    // a kernel larger than the input, stride 2
  uint64_t seed = 11;
  for (const ConvDesc& d : cases) {
    const Shape o = d.out();
    const std::vector<float> x = test::random_values(size_t(d.in.size()), seed++);
    const std::vector<float> dy = test::random_values(size_t(o.size()), seed++);
    const std::vector<double> want = test::naive_conv_backward(d, x, std::vector<float>(
        size_t(d.out_c) * d.in.c * d.kh * d.kw), dy).dw;
    const std::vector<float> wantf(want.begin(), want.end());
    const int64_t rows = int64_t(d.in.c) * d.kh * d.kw, pixels = int64_t(o.h) * o.w;
    const bool direct = d.kh == 1 && d.kw == 1 && d.stride == 1;
    const int64_t per_sample = 4 * ((direct ? 0 : rows * pixels) + rows * d.out_c);  // bytes
    // Budgets for all five samples in one chunk, two a chunk (2, 2, 1: the last chunk short) and
    // one a chunk (dW accumulated directly), and less than one sample's need (still one).
    const struct {
      int64_t budget;
      int per_chunk, chunks;
    } schedules[] = {{100 * per_sample, 5, 1}, {2 * per_sample + 1, 2, 3}, {per_sample, 1, 5}, {1, 1, 5}};
    for (const auto& s : schedules) {
      k::WgradGemm g;
      const std::vector<float> got = wgrad_on_host(d, x, dy, s.budget, &g);
      const std::string what = "dw of " + d.in.str() + " -> " + std::to_string(d.out_c) + ", " +
                               std::to_string(d.kh) + "x" + std::to_string(d.kw) + " stride " +
                               std::to_string(d.stride) + ", " + std::to_string(g.per_chunk) + " a chunk";
      EXPECT_EQ(g.direct, direct) << what;
      EXPECT_EQ(g.per_chunk, s.per_chunk) << what;
      EXPECT_EQ(g.chunks, s.chunks) << what;
      test::expect_close(wantf, got, 1e-5, what);
    }
  }
}

// BF16 / FP16: the GEMM of the rounded operands is the convolution of the rounded x and dY, so
// the same 1e-5 holds against the direct convolution of the rounded tensors; the 1x1 is unrolled
// too (the unrolling does the rounding), and a chunk holds twice the samples for the same bytes.
TEST(WgradGemm, SixteenBitOperandsGiveTheConvolutionOfTheRoundedTensors) {
  using test::conv_desc;
  const ConvDesc cases[] = {conv_desc({5, 3, 9, 11}, 4, 5, 5, 1, 2, 2, 2, 2),
                            conv_desc({5, 2, 8, 7}, 3, 4, 4, 1, 1, 2, 1, 2),
                            conv_desc({5, 6, 5, 4}, 7, 1, 1, 1, 0, 0, 0, 0)};
  uint64_t seed = 41;
  for (const k::Half16 half : {k::Half16::kBf16, k::Half16::kFp16}) {
    for (const ConvDesc& d : cases) {
      const Shape o = d.out();
      std::vector<float> x = test::random_values(size_t(d.in.size()), seed++);
      std::vector<float> dy = test::random_values(size_t(o.size()), seed++);
      const int64_t rows = int64_t(d.in.c) * d.kh * d.kw, pixels = int64_t(o.h) * o.w;
      const int64_t budget = 2 * (2 * rows * pixels + 4 * rows * d.out_c);  // two samples of 16-bit col
      k::WgradGemm g;
      const std::vector<float> got = wgrad_on_host(d, x, dy, budget, &g, &half);
      const std::string what = std::string(half == k::Half16::kBf16 ? "bf16 " : "fp16 ") + d.in.str() + " " +
                               std::to_string(d.kh) + "x" + std::to_string(d.kw);
      EXPECT_FALSE(g.direct) << what;
      EXPECT_EQ(g.per_chunk, 2) << what;
      for (float& v : x) v = k::from_half16(half, k::to_half16(half, v));
      for (float& v : dy) v = k::from_half16(half, k::to_half16(half, v));
      const std::vector<double> want =
          test::naive_conv_backward(d, x, std::vector<float>(size_t(d.out_c) * rows), dy).dw;
      test::expect_close(std::vector<float>(want.begin(), want.end()), got, 1e-5, what);
    }
  }
}

// NHWC (BF16's default layout): dY's rounded copy NHWC, the unrolling pixel-major, x a 16-bit NHWC
// activation or FP32 NCHW (a network input); every schedule; against the direct convolution of
// the rounded tensors, to the same 1e-5. Caught when tried: the unrolling row-major as in NCHW
// (lda P), dY read untransposed, x's channel read as its row, the OHWI result left untransposed.
TEST(WgradGemm, NhwcOperandsGiveTheConvolutionOfTheRoundedTensors) {
  using test::conv_desc;
  const ConvDesc cases[] = {conv_desc({5, 3, 9, 11}, 4, 5, 5, 1, 2, 2, 2, 2),
                            conv_desc({5, 2, 8, 7}, 3, 4, 4, 1, 1, 2, 1, 2),
                            conv_desc({5, 3, 9, 10}, 2, 3, 3, 2, 1, 1, 1, 1),
                            conv_desc({5, 6, 5, 4}, 7, 1, 1, 1, 0, 0, 0, 0)};
  uint64_t seed = 71;
  for (const k::Half16 half : {k::Half16::kBf16, k::Half16::kFp16})
    for (bool x_nhwc : {true, false})
      for (const ConvDesc& d : cases) {
        const Shape o = d.out();
        std::vector<float> x = test::random_values(size_t(d.in.size()), seed++);
        std::vector<float> dy = test::random_values(size_t(o.size()), seed++);
        const int64_t rows = int64_t(d.in.c) * d.kh * d.kw, pixels = int64_t(o.h) * o.w;
        const int64_t per_sample = 2 * rows * pixels + 4 * rows * d.out_c;
        for (const int64_t budget : {100 * per_sample, 2 * per_sample, int64_t(1)}) {
          k::WgradGemm g;
          const std::vector<float> got = wgrad_on_host(d, x, dy, budget, &g, &half, true, x_nhwc);
          const std::string what = std::string(half == k::Half16::kBf16 ? "bf16 " : "fp16 ") +
                                   (x_nhwc ? "x NHWC " : "x NCHW ") + d.in.str() + " " + std::to_string(d.kh) + "x" +
                                   std::to_string(d.kw) + "/" + std::to_string(d.stride) + ", " +
                                   std::to_string(g.per_chunk) + " a chunk";
          EXPECT_FALSE(g.direct) << what;
          EXPECT_TRUE(g.nhwc) << what;
          std::vector<float> xr = x, dyr = dy;
          for (float& v : xr) v = k::from_half16(half, k::to_half16(half, v));
          for (float& v : dyr) v = k::from_half16(half, k::to_half16(half, v));
          const std::vector<double> want =
              test::naive_conv_backward(d, xr, std::vector<float>(size_t(d.out_c) * rows), dyr).dw;
          test::expect_close(std::vector<float>(want.begin(), want.end()), got, 1e-5, what);
        }
      }
}

TEST(WgradGemm, ScheduleSizesFollowTheBudget) {
  // MNN's polyphase 5x5 at batch 32 (100 -> 528 channels on 60 x 106) under the 512 MiB default:
  // 63.6 MB of unrolled input and 5.3 MB of partials a sample, so 7 samples a chunk, 5 chunks.
  const k::WgradGemm g = k::make_wgrad_gemm(32, 100, 60, 106, 5, 5, 1, 2, 2, 528, 60, 106, int64_t(512) << 20);
  EXPECT_FALSE(g.direct);
  EXPECT_EQ(g.rows, 2500);
  EXPECT_EQ(g.pixels, 6360);
  EXPECT_EQ(g.per_chunk, 7);
  EXPECT_EQ(g.chunks, 5);
  EXPECT_LE(4 * (k::wgrad_col_elements(g) + k::wgrad_partial_floats(g)), int64_t(512) << 20);
  const k::WgradGemmCall last = k::wgrad_gemm_call(g, 4);
  EXPECT_EQ(last.batch, 4);  // 32 = 4 * 7 + 4
  EXPECT_TRUE(last.accumulate);
  EXPECT_EQ(last.b_offset, int64_t(28) * 528 * 6360);
  EXPECT_FALSE(k::wgrad_gemm_call(g, 0).accumulate);
  // In 16 bits the unrolled input takes half the bytes: 14 samples a chunk, 3 chunks.
  const k::WgradGemm h = k::make_wgrad_gemm(32, 100, 60, 106, 5, 5, 1, 2, 2, 528, 60, 106, int64_t(512) << 20, 2);
  EXPECT_EQ(h.per_chunk, 14);
  EXPECT_EQ(h.chunks, 3);
  EXPECT_EQ(k::wgrad_gemm_call(h, 2).batch, 4);
  // A batch of 0 has no chunk; one sample a chunk has no partials.
  EXPECT_EQ(k::make_wgrad_gemm(0, 3, 4, 4, 3, 3, 1, 1, 1, 2, 4, 4, 1 << 22).chunks, 0);
  EXPECT_EQ(k::wgrad_partial_floats(k::make_wgrad_gemm(4, 3, 4, 4, 3, 3, 1, 1, 1, 2, 4, 4, 1)), 0);
}

}  // namespace
}  // namespace ds::model
