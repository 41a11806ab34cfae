// The bodies of the BF16/FP16 casts around reduced-precision convolutions (model/kernels/
// half_cast.h), on the CPU: the rounding must be exactly IEEE round-to-nearest-even (checked
// against the compiler's _Float16 where it has one, and by a nearest-neighbour property for every
// input), and the NHWC transpose must put every element where cuDNN's NHWC layout expects it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "bitwise_probe.h"
#include "model/kernels/elementwise.h"
#include "model/kernels/half_cast.h"

namespace ds::model::kernels {
namespace {

using test::same_bits;
using test::special_probe;

// Floats over the whole range both formats care about: tiny (FP16 subnormals), ordinary, huge,
// and the exact halfway points between neighbouring 16-bit values (where ties-to-even decides).
std::vector<float> probe_values() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f, 70000.0f, 5.9604645e-8f,
                          2.98e-8f, 2.9802322e-8f, 6.1035156e-5f, 1e-10f, 3.4e38f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::denorm_min()};
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
  for (int i = 0; i < 200000; ++i) {
    const float f = bits_float(bits(rng));
    if (!std::isnan(f)) v.push_back(f);
  }
  for (uint32_t h = 0; h < 0x7c00u; ++h) {  // FP16 midpoints (and just around them)
    const float a = fp16_to_float(uint16_t(h)), b = fp16_to_float(uint16_t(h + 1));
    const float mid = float((double(a) + double(b)) / 2);
    v.insert(v.end(), {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f), -mid});
  }
  for (uint32_t h = 0; h < 0x7f80u; h += 7) {  // BF16 midpoints
    const float mid = bits_float((h << 16) | 0x8000u);
    v.insert(v.end(), {mid, bits_float((h << 16) | 0x7fffu), bits_float((h << 16) | 0x8001u)});
  }
  return v;
}

// r is the correctly rounded 16-bit value of f: no representable neighbour is nearer, and on a tie
// r's last bit is even.
void expect_nearest(Half16 k, float f, uint16_t r) {
  const float got = from_half16(k, r);
  const double max_finite = k == Half16::kFp16 ? 65504.0 : 3.3895313892515355e38;
  const double ulp_at_max = k == Half16::kFp16 ? 32.0 : 1.329227995784916e36;
  if (std::fabs(double(f)) >= max_finite + ulp_at_max / 2) {
    ASSERT_TRUE(std::isinf(got) && std::signbit(got) == std::signbit(f)) << f;
    return;
  }
  ASSERT_TRUE(std::isfinite(got)) << f << " -> " << got;
  const double err = std::fabs(double(got) - double(f));
  for (int step : {-1, 1}) {
    const uint16_t n = uint16_t(r + step);
    if ((r & 0x7fffu) == 0 && step == -1) continue;  // below +-0 is the other sign's zero
    const float other = from_half16(k, n);
    if (!std::isfinite(other)) continue;
    const double e2 = std::fabs(double(other) - double(f));
    ASSERT_LE(err, e2) << "f=" << f << " r=" << r;
    if (err == e2 && err != 0) {
      ASSERT_EQ(r & 1u, 0u) << "tie not to even: f=" << f;
    }
  }
}

TEST(KernelBodiesHalfCast, Fp16RoundsToNearestEven) {
  for (float f : probe_values()) expect_nearest(Half16::kFp16, f, float_to_fp16(f));
#if defined(__FLT16_MAX__)
  // The compiler's own conversion (IEEE, round to nearest even) must agree bit for bit.
  for (float f : probe_values()) {
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t bits;
    std::memcpy(&bits, &h, 2);
    ASSERT_EQ(float_to_fp16(f), bits) << f;
  }
#endif
}

TEST(KernelBodiesHalfCast, Bf16RoundsToNearestEven) {
  for (float f : probe_values()) expect_nearest(Half16::kBf16, f, float_to_bf16(f));
}

TEST(KernelBodiesHalfCast, EveryHalfValueRoundTripsAndNanStaysNan) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    for (Half16 k : {Half16::kFp16, Half16::kBf16}) {
      const float f = from_half16(k, uint16_t(h));
      if (std::isnan(f)) {
        EXPECT_TRUE(std::isnan(from_half16(k, to_half16(k, f))));
        continue;
      }
      ASSERT_EQ(to_half16(k, f), h) << "kind " << int(k);
    }
  }
  EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80u);
  EXPECT_EQ(float_to_fp16(1.0f), 0x3c00u);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bffu);
  EXPECT_EQ(float_to_fp16(1e6f), 0x7c00u);
  EXPECT_EQ(float_to_fp16(5.9604645e-8f), 0x0001u);  // the smallest subnormal
}

// NCHW -> NHWC while casting, then back: every element lands at cuDNN's NHWC offset
// ((n*H + y)*W + x)*C + c and returns to its own place; NCHW layout is the identity.
TEST(KernelBodiesHalfCast, NhwcTransposeRoundTrips) {
  const int n = 2, c = 3, h = 4, w = 5;
  const int64_t total = int64_t(n) * c * h * w;
  std::vector<float> x(total), back(total, -1.0f);
  for (int64_t i = 0; i < total; ++i) x[i] = float(i);  // integers < 256: exact in BF16 and FP16
  for (bool nhwc : {true, false}) {
    for (Half16 k : {Half16::kFp16, Half16::kBf16}) {
      std::vector<uint16_t> xh(total);
      for (int64_t i = 0; i < total; ++i) cast_to_half16_at(i, k, c, h, w, nhwc, x.data(), xh.data());
      for (int s = 0; s < n; ++s)
        for (int ch = 0; ch < c; ++ch)
          for (int yy = 0; yy < h; ++yy)
            for (int xx = 0; xx < w; ++xx) {
              const int64_t src = ((int64_t(s) * c + ch) * h + yy) * w + xx;
              const int64_t dst = nhwc ? ((int64_t(s) * h + yy) * w + xx) * c + ch : src;
              ASSERT_EQ(from_half16(k, xh[dst]), x[src]);
            }
      for (int64_t i = 0; i < total; ++i) cast_from_half16_at(i, k, c, h, w, nhwc, xh.data(), back.data());
      EXPECT_EQ(back, x);
    }
  }
}

// The casts fused into their neighbours (DOWNSCALE_CUDA_FUSE16) against the separate bodies
// they replace, composed: bit for bit, with NaN-filled outputs so an element the fused body
// never writes fails, and with the special values (NaN, -0, +-inf, a tie) in the data
// (bitwise_probe.h).
TEST(KernelBodiesHalfCast, FusedForwardEpilogueIsWidenThenBiasThenRelu) {
  const int n = 2, c = 3, h = 4, w = 5;
  const int64_t total = int64_t(n) * c * h * w, hw = int64_t(h) * w;
  const std::vector<float> x = special_probe(total, 3), bias = {0.5f, -0.25f, 1e-3f};
  for (Half16 k : {Half16::kBf16, Half16::kFp16}) {
    std::vector<uint16_t> yh(static_cast<size_t>(total));
    for (int64_t i = 0; i < total; ++i) cast_to_half16_at(i, k, c, h, w, false, x.data(), yh.data());
    for (const float* b : {bias.data(), static_cast<const float*>(nullptr)})
      for (bool relu : {false, true}) {
        std::vector<float> want(static_cast<size_t>(total)), got(static_cast<size_t>(total), std::nanf(""));
        for (int64_t i = 0; i < total; ++i) cast_from_half16_at(i, k, c, h, w, false, yh.data(), want.data());
        if (b)
          for (int64_t i = 0; i < total; ++i) want[size_t(i)] = b[i / hw % c] + want[size_t(i)];
        if (relu)
          for (int64_t i = 0; i < total; ++i) relu_forward_at(i, want.data(), want.data());
        // As the CUDA kernel walks it: a (sample, channel) plane at a time, its channel known.
        for (int64_t plane = 0; plane < int64_t(n) * c; ++plane)
          for (int64_t j = 0; j < hw; ++j)
            cast_from_half16_bias_relu_at(plane * hw + j, int(plane % c), k, yh.data(), b, relu, got.data());
        for (int64_t i = 0; i < total; ++i)
          ASSERT_TRUE(same_bits(want[size_t(i)], got[size_t(i)]))
              << "element " << i << " bias " << (b != nullptr) << " relu " << relu << ": want " << want[size_t(i)]
              << " got " << got[size_t(i)];
      }
  }
}

// Its FP32 sibling (kernels::bias_relu_at, the TF32/FP32 epilogue when cuDNN's fused call does
// not run) against cudnnAddTensor's y = 1 * b + 1 * y then relu_forward_at.
TEST(KernelBodiesHalfCast, Fp32EpilogueIsBiasThenRelu) {
  const int n = 2, c = 3, h = 4, w = 5;
  const int64_t total = int64_t(n) * c * h * w, hw = int64_t(h) * w;
  const std::vector<float> x = special_probe(total, 4), bias = {0.5f, -0.25f, 1e-3f};
  for (const float* b : {bias.data(), static_cast<const float*>(nullptr)})
    for (bool relu : {false, true}) {
      std::vector<float> want = x, got = x;
      if (b)
        for (int64_t i = 0; i < total; ++i) want[size_t(i)] = 1.0f * b[i / hw % c] + 1.0f * want[size_t(i)];
      if (relu)
        for (int64_t i = 0; i < total; ++i) relu_forward_at(i, want.data(), want.data());
      for (int64_t plane = 0; plane < int64_t(n) * c; ++plane)
        for (int64_t j = 0; j < hw; ++j) bias_relu_at(plane * hw + j, int(plane % c), b, relu, got.data());
      for (int64_t i = 0; i < total; ++i)
        ASSERT_TRUE(same_bits(want[size_t(i)], got[size_t(i)])) << "element " << i << " bias " << (b != nullptr)
                                                                << " relu " << relu;
    }
}

TEST(KernelBodiesHalfCast, FusedReluGradientRoundingIsMaskThenCast) {
  const int64_t total = 2 * 3 * 4 * 5;
  const std::vector<float> y = special_probe(total, 5), dy = special_probe(total, 6);
  for (Half16 k : {Half16::kBf16, Half16::kFp16})
    for (const float* mask : {y.data(), static_cast<const float*>(nullptr)}) {
      std::vector<float> g_want(static_cast<size_t>(total)), g(static_cast<size_t>(total), std::nanf(""));
      for (int64_t i = 0; i < total; ++i) {
        if (mask)
          relu_backward_at(i, mask, dy.data(), g_want.data());
        else
          g_want[size_t(i)] = dy[size_t(i)];
      }
      std::vector<uint16_t> gh_want(static_cast<size_t>(total)), gh(static_cast<size_t>(total), 0xffffu), gh_only(static_cast<size_t>(total), 0xffffu);
      for (int64_t i = 0; i < total; ++i) cast_to_half16_at(i, k, 3, 4, 5, false, g_want.data(), gh_want.data());
      for (int64_t i = 0; i < total; ++i) relu_grad_to_half16_at(i, k, mask, dy.data(), g.data(), gh.data());
      for (int64_t i = 0; i < total; ++i) relu_grad_to_half16_at(i, k, mask, dy.data(), nullptr, gh_only.data());
      for (int64_t i = 0; i < total; ++i) {
        ASSERT_TRUE(same_bits(g_want[size_t(i)], g[size_t(i)])) << "element " << i;
        ASSERT_EQ(gh_want[size_t(i)], gh[size_t(i)]) << "element " << i;
        ASSERT_EQ(gh_want[size_t(i)], gh_only[size_t(i)]) << "element " << i;
      }
    }
}

}  // namespace
}  // namespace ds::model::kernels
