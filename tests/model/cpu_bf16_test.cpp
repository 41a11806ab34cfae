// BF16 math on the CPU backend (set_math(kBf16), oneDNN with avx512_bf16): which modes it
// honours, each bf16 op against the same op in FP32 on random data, and the demo net's loss curve
// over 100 Adam steps in bf16 against FP32. Skipped, with the reason, on CPUs without avx512_bf16.
//
// Tolerance of one op. bfloat16 keeps 8 significant bits (7 stored), so rounding an input to
// nearest even changes it by at most half an ulp, 2^-8 relative, and a product of two rounded
// inputs by at most 2^-7 (+2^-16) relative; the product itself is exact in FP32 (8 x 8 bits) and
// the sum of K products is accumulated in FP32 (the reference's own rounding is K * 2^-24 relative
// at worst, < 1e-4 for the K here). So for every output element
// |bf16 - fp32| <= (2^-7 + 1e-4) * sum_k |a_k| |b_k|: the same op applied to the absolute values
// of its operands, which the FP32 backend computes for us. That bound is rigorous but loose (the
// errors are random in sign); the typical error is checked too: RMS(bf16 - fp32) <= 1e-2 *
// RMS(fp32 output), where independent per-input rounding errors of RMS ~2^-8/sqrt(3) give ~3e-3.
// A result equal to FP32 everywhere would mean the bf16 path was not taken, so some difference is
// required.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <string>

#include "model/adam.h"
#include "model/backend.h"
#include "model/loss.h"
#include "model/net.h"
#include "model_test_util.h"
#include "support/scoped_env.h"

namespace ds::model {
namespace {

using test::make_tensor;
using test::random_values;

bool cpuinfo_has_avx512_bf16() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("flags", 0) == 0) return line.find(" avx512_bf16") != std::string::npos;
  return false;
}

#define REQUIRE_BF16(be) REQUIRE_CPU_BF16(be)

std::vector<float> absolute(std::vector<float> v) {
  for (float& x : v) x = std::fabs(x);
  return v;
}

// got (bf16) against want (fp32) with the bound bound_abs (the op on absolute values): see above.
void expect_bf16_close(const std::vector<float>& got, const std::vector<float>& want,
                       const std::vector<float>& bound_abs, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(got.size(), bound_abs.size()) << what;
  double err2 = 0, ref2 = 0, max_diff = 0;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = double(got[i]) - want[i];
    err2 += d * d;
    ref2 += double(want[i]) * want[i];
    max_diff = std::max(max_diff, std::fabs(d));
    const double tol = (std::ldexp(1.0, -7) + 1e-4) * bound_abs[i] + 1e-6;
    if (std::fabs(d) > tol && ++bad <= 5)
      ADD_FAILURE() << what << "[" << i << "]: bf16 " << got[i] << " fp32 " << want[i] << " bound " << tol;
  }
  EXPECT_EQ(bad, 0) << what;
  const double rms_err = std::sqrt(err2 / got.size()), rms_ref = std::sqrt(ref2 / got.size());
  EXPECT_LE(rms_err, 1e-2 * rms_ref) << what << ": RMS error " << rms_err << " of RMS " << rms_ref;
  EXPECT_GT(max_diff, 0.0) << what << ": identical to FP32, so the bf16 path did not run";
}

TEST(ModelCpuBf16, SetMathHonoursOnlyWhatTheCpuCan) {
  auto be = make_cpu_backend(1);
  EXPECT_FALSE(be->set_math(MathMode::kFp16)) << "no FP16 convolutions on x86 CPUs";
  EXPECT_FALSE(be->set_math(MathMode::kTf32)) << "TF32 is a tensor-core format: the CPU computes FP32";
  EXPECT_FALSE(be->set_math(MathMode::kFp32));
  // oneDNN's ISA can be capped below the hardware's (DNNL_MAX_CPU_ISA); compare only without a cap.
  if (std::getenv("DNNL_MAX_CPU_ISA") || std::getenv("ONEDNN_MAX_CPU_ISA")) GTEST_SKIP() << "oneDNN ISA capped";
  EXPECT_EQ(be->set_math(MathMode::kBf16), cpuinfo_has_avx512_bf16());
}

// The primitive caches are keyed by mode: back in FP32, the same backend computes exactly what a
// backend that never saw BF16 does, for convolutions and the dense layer.
TEST(ModelCpuBf16, BackToFp32IsExactlyFp32) {
  REQUIRE_BF16(be);
  auto ref = make_cpu_backend(2);
  ConvDesc d;
  d.in = Shape{2, 5, 7, 9};
  d.out_c = 6;
  d.kh = d.kw = 3;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  const auto xv = random_values(size_t(d.in.size()), 1), wv = random_values(size_t(6 * 5 * 9), 2),
             bv = random_values(6, 3);
  auto conv = [&](Backend& b) {
    Tensor x = make_tensor(b, d.in, xv), w = make_tensor(b, Shape{6, 5, 3, 3}, wv), bias = make_tensor(b, Shape{1, 6, 1, 1}, bv);
    Tensor y(b, d.out()), z(b, Shape{2, 3, 1, 1});
    b.conv2d_forward(d, x.data(), w.data(), bias.data(), y.data());
    b.dense_forward(2, 3, 3, x.data(), w.data(), bias.data(), z.data());
    std::vector<float> out = y.to_host(), zz = z.to_host();
    out.insert(out.end(), zz.begin(), zz.end());
    return out;
  };
  const auto in_bf16 = conv(*be);
  EXPECT_FALSE(be->set_math(MathMode::kFp32));
  const auto back = conv(*be), want = conv(*ref);
  EXPECT_EQ(back, want);
  EXPECT_NE(in_bf16, want);
}

struct ConvCase {
  int n, c, h, w, o, kh, kw, stride;
  bool plain;  // DS_CONV_PLAIN_LAYOUTS: bf16 on plain NCHW/OIHW as well as oneDNN's blocked layouts
};
void PrintTo(const ConvCase& k, std::ostream* os) {
  *os << "n" << k.n << "_c" << k.c << "x" << k.h << "x" << k.w << "_o" << k.o << "_k" << k.kh << "x" << k.kw << "_s"
      << k.stride << (k.plain ? "_plain" : "_blocked");
}

class ModelCpuBf16Conv : public ::testing::TestWithParam<ConvCase> {};

// Forward, backward data and backward weights (with bias) in bf16 against FP32.
TEST_P(ModelCpuBf16Conv, MatchesFp32WithinBf16Rounding) {
  const ConvCase k = GetParam();
  std::optional<ds::test::ScopedEnv> plain_layouts;  // for the primitives built in this test only
  if (k.plain) plain_layouts.emplace("DS_CONV_PLAIN_LAYOUTS", "1");
  REQUIRE_BF16(be);
  auto ref = make_cpu_backend(2);
  ConvDesc d;
  d.in = Shape{k.n, k.c, k.h, k.w};
  d.out_c = k.o;
  d.kh = k.kh;
  d.kw = k.kw;
  d.stride = k.stride;
  if (k.stride == 1) {
    same_padding(k.kh, d.pad_top, d.pad_bottom);
    same_padding(k.kw, d.pad_left, d.pad_right);
  }
  const Shape os = d.out(), ws{k.o, k.c, k.kh, k.kw}, bs{1, k.o, 1, 1};
  const auto xv = random_values(size_t(d.in.size()), 31), wv = random_values(size_t(ws.size()), 32),
             bv = random_values(size_t(k.o), 33), dyv = random_values(size_t(os.size()), 34);
  struct Out { std::vector<float> y, dx, dw, db; };
  auto run = [&](Backend& b, const std::vector<float>& x_, const std::vector<float>& w_, const std::vector<float>& b_,
                 const std::vector<float>& dy_) {
    Tensor x = make_tensor(b, d.in, x_), w = make_tensor(b, ws, w_), bias = make_tensor(b, bs, b_),
           dy = make_tensor(b, os, dy_);
    Tensor y(b, os), dx(b, d.in), dw(b, ws), db(b, bs);
    b.conv2d_forward(d, x.data(), w.data(), bias.data(), y.data());
    b.conv2d_backward_data(d, dy.data(), w.data(), dx.data());
    b.conv2d_backward_weights(d, x.data(), dy.data(), dw.data(), db.data());
    return Out{y.to_host(), dx.to_host(), dw.to_host(), db.to_host()};
  };
  const Out got = run(*be, xv, wv, bv, dyv), want = run(*ref, xv, wv, bv, dyv);
  const Out bound = run(*ref, absolute(xv), absolute(wv), absolute(bv), absolute(dyv));
  expect_bf16_close(got.y, want.y, bound.y, "y");
  expect_bf16_close(got.dx, want.dx, bound.dx, "dx");
  expect_bf16_close(got.dw, want.dw, bound.dw, "dw");
  expect_bf16_close(got.db, want.db, bound.db, "db");
}

INSTANTIATE_TEST_SUITE_P(Cases, ModelCpuBf16Conv,
                         ::testing::Values(ConvCase{2, 16, 12, 14, 32, 3, 3, 1, false},  // blocked, 16-aligned
                                           ConvCase{3, 20, 9, 11, 25, 2, 2, 1, false},   // MNN's odd widths, even k
                                           ConvCase{2, 7, 10, 10, 5, 4, 4, 2, false},    // strided, no padding
                                           ConvCase{2, 16, 8, 9, 16, 3, 3, 1, true}));   // plain layouts

// The polyphase upsample-conv (MNN's up blocks) in bf16 against FP32: its folded weights are
// rounded once more, after the fold sums up to f*f taps, which the bound on |w| still covers
// (|fold(w)| <= fold(|w|)).
TEST(ModelCpuBf16, UpsampleConvMatchesFp32) {
  REQUIRE_BF16(be);
  auto ref = make_cpu_backend(2);
  const int f = 2;
  ConvDesc d;
  d.in = Shape{2, 12, 16, 18};  // upsampled from 8 x 9
  d.out_c = 10;
  d.kh = d.kw = 4;
  same_padding(4, d.pad_top, d.pad_bottom);
  same_padding(4, d.pad_left, d.pad_right);
  const Shape small{2, 12, 8, 9}, os = d.out(), ws{10, 12, 4, 4}, bs{1, 10, 1, 1};
  const auto xv = random_values(size_t(small.size()), 41), wv = random_values(size_t(ws.size()), 42),
             bv = random_values(10, 43), dyv = random_values(size_t(os.size()), 44);
  struct Out { std::vector<float> y, dx, dw, db; };
  auto run = [&](Backend& b, const std::vector<float>& x_, const std::vector<float>& w_, const std::vector<float>& b_,
                 const std::vector<float>& dy_) {
    EXPECT_EQ(b.upsample_conv2d_scratch(d, f), 0);  // the polyphase path, not the composition
    Tensor x = make_tensor(b, small, x_), w = make_tensor(b, ws, w_), bias = make_tensor(b, bs, b_),
           dy = make_tensor(b, os, dy_);
    Tensor y(b, os), dx(b, small), dw(b, ws), db(b, bs);
    b.upsample_conv2d_forward(d, f, x.data(), w.data(), bias.data(), y.data(), nullptr);
    b.upsample_conv2d_backward_data(d, f, dy.data(), w.data(), dx.data(), nullptr);
    b.upsample_conv2d_backward_weights(d, f, x.data(), dy.data(), dw.data(), db.data(), nullptr);
    return Out{y.to_host(), dx.to_host(), dw.to_host(), db.to_host()};
  };
  const Out got = run(*be, xv, wv, bv, dyv), want = run(*ref, xv, wv, bv, dyv);
  const Out bound = run(*ref, absolute(xv), absolute(wv), absolute(bv), absolute(dyv));
  expect_bf16_close(got.y, want.y, bound.y, "y");
  expect_bf16_close(got.dx, want.dx, bound.dx, "dx");
  expect_bf16_close(got.dw, want.dw, bound.dw, "dw");
  expect_bf16_close(got.db, want.db, bound.db, "db");
}

// The dense layer (oneDNN inner product) in bf16 against FP32, DeepESD-like sizes.
TEST(ModelCpuBf16, DenseMatchesFp32) {
  REQUIRE_BF16(be);
  auto ref = make_cpu_backend(2);
  const int n = 6, in = 300, out = 70;
  const auto xv = random_values(size_t(n) * in, 51), wv = random_values(size_t(out) * in, 52),
             bv = random_values(size_t(out), 53), dyv = random_values(size_t(n) * out, 54);
  struct Out { std::vector<float> y, dx, dw, db; };
  auto run = [&](Backend& b, const std::vector<float>& x_, const std::vector<float>& w_, const std::vector<float>& b_,
                 const std::vector<float>& dy_) {
    Tensor x = make_tensor(b, Shape{n, in, 1, 1}, x_), w = make_tensor(b, Shape{out, in, 1, 1}, w_),
           bias = make_tensor(b, Shape{1, out, 1, 1}, b_), dy = make_tensor(b, Shape{n, out, 1, 1}, dy_);
    Tensor y(b, Shape{n, out, 1, 1}), dx(b, x.shape()), dw(b, w.shape()), db(b, bias.shape());
    b.dense_forward(n, in, out, x.data(), w.data(), bias.data(), y.data());
    b.dense_backward_data(n, in, out, dy.data(), w.data(), dx.data());
    b.dense_backward_weights(n, in, out, x.data(), dy.data(), dw.data(), db.data());
    return Out{y.to_host(), dx.to_host(), dw.to_host(), db.to_host()};
  };
  const Out got = run(*be, xv, wv, bv, dyv), want = run(*ref, xv, wv, bv, dyv);
  const Out bound = run(*ref, absolute(xv), absolute(wv), absolute(bv), absolute(dyv));
  expect_bf16_close(got.y, want.y, bound.y, "y");
  expect_bf16_close(got.dx, want.dx, bound.dx, "dx");
  expect_bf16_close(got.dw, want.dw, bound.dw, "dw");
  // db sums the bf16 dy over only 6 rows, where rounding may happen to cancel, so no difference
  // is required there; the bound still applies.
  for (size_t i = 0; i < got.db.size(); ++i)
    EXPECT_NEAR(got.db[i], want.db[i], (std::ldexp(1.0, -7) + 1e-4) * bound.db[i] + 1e-6) << "db " << i;
}

}  // namespace
}  // namespace ds::model

namespace ds::model {
namespace {

// The demo net (configs/demo.yaml's model: three 16-wide convs on the 20 x 8 x 12 predictor grid)
// trained 100 Adam steps on one fixed synthetic batch, in bf16 and in FP32 from the same initial
// weights. Returns the loss before each step.
std::vector<double> demo_loss_curve(Backend& be) {
  ModelSpec spec;
  spec.name = "demo";
  spec.in_channels = 20;
  spec.in_h = 8;
  spec.in_w = 12;
  spec.filters = {16, 16, 16};
  Net net(spec, be);
  net.init(3);
  const int n = 4;
  const Shape os = net.output_shape(n);
  const size_t hw = size_t(os.h) * os.w;
  std::vector<float> y(n * hw), mask(hw, 1.0f);
  for (int s = 0; s < n; ++s)  // dry where a smooth field is negative, a Gamma-ish amount elsewhere
    for (int r = 0; r < os.h; ++r)
      for (int c = 0; c < os.w; ++c) {
        const double v = std::sin(0.3 * r + 0.2 * c + 0.7 * s);
        y[s * hw + size_t(r) * os.w + c] = v > 0 ? float(0.5 + 3.0 * v) : 0.0f;
      }
  for (size_t i = 0; i < hw; i += 7) mask[i] = 0.0f;  // some sea points
  Tensor x = make_tensor(be, Shape{n, 20, 8, 12}, random_values(size_t(n) * 20 * 8 * 12, 61));
  Tensor yt = make_tensor(be, Shape{n, 1, os.h, os.w}, y), mt = make_tensor(be, Shape{1, 1, os.h, os.w}, mask);
  Adam adam(net.params(), be);
  Tensor d(be, os);
  std::vector<double> curve;
  for (int step = 0; step < 100; ++step) {
    curve.push_back(bernoulli_gamma_loss(be, net.forward(x), yt, mt, &d));
    net.backward(d);
    adam.step(1e-3 * (1.0 - step / 100.0));  // demo.yaml's rate, decayed: see the test
  }
  return curve;
}

// Bound: each step's gradient carries the ops' bf16 error, ~3e-3 relative (see the top), and the
// two runs drift apart as those perturbations compound through Adam; with the rate decayed to 0
// (a constant rate ends this memorising run in loss spikes whose timing says nothing about the
// arithmetic) the drift seen is at most 8e-3 of the loss (by the last steps, at 0.6 from 1.8).
// 3e-2 leaves room for other CPUs' kernels while a wrong bf16 path (a misread operand, a
// dropped tap) departs by O(1) within a few steps. Both must also learn: the loss halves.
TEST(ModelCpuBf16, DemoLossCurveFollowsFp32) {
  REQUIRE_BF16(be);
  auto ref = make_cpu_backend(2);
  const auto bf16 = demo_loss_curve(*be), fp32 = demo_loss_curve(*ref);
  double worst = 0;
  size_t worst_step = 0;
  for (size_t i = 0; i < fp32.size(); ++i) {
    const double rel = std::fabs(bf16[i] - fp32[i]) / std::fabs(fp32[i]);
    if (rel > worst) worst = rel, worst_step = i;
  }
  EXPECT_LE(worst, 3e-2) << "step " << worst_step << ": bf16 " << bf16[worst_step] << " fp32 " << fp32[worst_step];
  EXPECT_LT(fp32.back(), 0.5 * fp32.front()) << "fp32 did not learn";
  EXPECT_LT(bf16.back(), 0.5 * bf16.front()) << "bf16 did not learn";
  EXPECT_NE(bf16, fp32) << "identical curves: the bf16 path did not run";
  std::printf("demo loss: fp32 %.4f -> %.4f, bf16 %.4f -> %.4f, worst relative difference %.2g at step %zu\n",
              fp32.front(), fp32.back(), bf16.front(), bf16.back(), worst, worst_step);
}

}  // namespace
}  // namespace ds::model
