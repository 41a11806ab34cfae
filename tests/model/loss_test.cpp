// The masked losses: Bernoulli-Gamma, Gaussian NLL and MSE against their closed forms for
// hand-picked points, masking (including NaN targets), and gradients against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model/loss.h"
#include "model/loss_accumulator.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

using test::make_tensor;

constexpr double kEps = 1e-6;

double dry_nll(double p) { return -std::log(1.0 - p + kEps); }
double wet_nll(double p, double la, double lb, double y) {
  const double a = std::exp(la), b = std::exp(lb);
  return -(std::log(p + kEps) + (a - 1.0) * std::log(y + kEps) - a * std::log(b + kEps) - std::lgamma(a + kEps) -
           y / (b + kEps));
}

// Output (N=2, 3, 1, 3) as [p..., log_alpha..., log_beta...] per sample; mask [1, 1, 0].
struct Case {
  std::vector<float> out, y, mask;
};

Case hand_case() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Case c;
  c.out = {// sample 0: p, then log alpha, then log beta for the three points
           0.3f, 0.8f, 0.5f, 0.0f, std::log(1.5f), 9.0f, 0.0f, std::log(2.0f), -9.0f,
           // sample 1: p near 1 (dry: the worst case), p near 0 (wet)
           1.0f - 1e-7f, 1e-7f, 0.5f, 1.0f, std::log(0.7f), 0.0f, 2.0f, std::log(3.0f), 0.0f};
  c.y = {0.0f, 2.5f, nan,    // dry, wet, masked (NaN target: must be ignored)
         0.0f, 0.4f, 1e30f}; // dry, wet, masked (garbage target)
  c.mask = {1.0f, 1.0f, 0.0f};
  return c;
}

// The double-precision closed form against the backend's float-input, double-sum evaluation: the
// only differences are the float rounding of the inputs themselves, which the closed form below
// uses too (it reads the same float values), so 1e-9 relative is ample.
TEST(ModelLoss, MatchesClosedForm) {
  auto be = make_cpu_backend(2);
  const Case c = hand_case();
  Tensor out = make_tensor(*be, Shape{2, 3, 1, 3}, c.out);
  Tensor y = make_tensor(*be, Shape{2, 1, 1, 3}, c.y);
  Tensor mask = make_tensor(*be, Shape{1, 1, 1, 3}, c.mask);
  const auto& o = c.out;
  const double want = (dry_nll(o[0]) + wet_nll(o[1], o[4], o[7], c.y[1]) +  //
                       dry_nll(o[9]) + wet_nll(o[10], o[13], o[16], c.y[4])) /
                      4.0;  // 2 land points x 2 samples
  const double got = bernoulli_gamma_loss(*be, out, y, mask, nullptr);
  EXPECT_NEAR(got, want, 1e-9 * std::abs(want));
  // p ~ 1 at a dry point and p ~ 0 at a wet one are the worst cases: eps keeps them finite
  // (-log(1e-7 + 1e-6) ~ 13.7).
  EXPECT_TRUE(std::isfinite(got));
}

TEST(ModelLoss, MaskedPointsGetZeroGradientEvenWithNaNTargets) {
  auto be = make_cpu_backend(2);
  const Case c = hand_case();
  Tensor out = make_tensor(*be, Shape{2, 3, 1, 3}, c.out);
  Tensor y = make_tensor(*be, Shape{2, 1, 1, 3}, c.y);
  Tensor mask = make_tensor(*be, Shape{1, 1, 1, 3}, c.mask);
  Tensor d(*be, Shape{1, 1, 1, 1});  // reshaped by the loss
  const double l = bernoulli_gamma_loss(*be, out, y, mask, &d);
  ASSERT_TRUE(std::isfinite(l));
  ASSERT_EQ(d.shape(), out.shape());
  const auto g = d.to_host();
  for (float v : g) EXPECT_TRUE(std::isfinite(v));
  for (int s = 0; s < 2; ++s)
    for (int ch = 0; ch < 3; ++ch) EXPECT_EQ(g[size_t(s * 9 + ch * 3 + 2)], 0.0f) << "masked point, channel " << ch;
  // Dry points: alpha and beta get no gradient.
  EXPECT_EQ(g[3], 0.0f);
  EXPECT_EQ(g[6], 0.0f);
  // Dry point 0: d/dp of -log(1-p+eps), divided by the 4 valid points (0.36; a float gradient:
  // a few ulps, 1e-6 ample).
  EXPECT_NEAR(g[0], 1.0 / (1.0 - 0.3f + kEps) / 4.0, 1e-6);
}

TEST(ModelLoss, RejectsAnEmptyMaskAndBadShapes) {
  auto be = make_cpu_backend(1);
  Tensor out(*be, Shape{1, 3, 1, 2}), y(*be, Shape{1, 1, 1, 2}), mask(*be, Shape{1, 1, 1, 2});
  EXPECT_THROW(bernoulli_gamma_loss(*be, out, y, mask, nullptr), InputError);
  Tensor bad_y(*be, Shape{1, 1, 2, 1});
  EXPECT_THROW(bernoulli_gamma_loss(*be, out, bad_y, mask, nullptr), Error);
}

// Gradient against central differences of the (double) loss with respect to each float input.
// Step 1e-3 (the actual float step is the divisor); truncation ~ h^2 |f'''| / 6 < 1e-5 for these
// values (p away from 0 and 1, moderate alpha, beta). Relative 1e-3 with a floor of 1e-4.
TEST(ModelLoss, GradientMatchesFiniteDifferences) {
  auto be = make_cpu_backend(2);
  const Shape s{2, 3, 2, 3};
  std::vector<float> out = test::random_values(size_t(s.size()), 21, -1.0f, 1.0f);
  std::vector<float> yv = test::random_values(6 * 2, 22, 0.0f, 3.0f);
  for (size_t i = 0; i < yv.size(); i += 3) yv[i] = 0.0f;  // some dry points
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 6; ++i) out[size_t(n * 18 + i)] = 0.2f + 0.6f * (out[size_t(n * 18 + i)] + 1.0f) / 2.0f;
  Tensor o = make_tensor(*be, s, out);
  Tensor y = make_tensor(*be, Shape{2, 1, 2, 3}, yv);
  Tensor mask = make_tensor(*be, Shape{1, 1, 2, 3}, {1, 1, 1, 0, 1, 1});
  Tensor d(*be, s);
  bernoulli_gamma_loss(*be, o, y, mask, &d);
  const auto g = d.to_host();
  for (size_t i = 0; i < out.size(); ++i) {
    std::vector<float> v = out;
    v[i] = out[i] + 1e-3f;
    const float hi = v[i];
    o.upload(v.data());
    const double lp = bernoulli_gamma_loss(*be, o, y, mask, nullptr);
    v[i] = out[i] - 1e-3f;
    const float lo = v[i];
    o.upload(v.data());
    const double lm = bernoulli_gamma_loss(*be, o, y, mask, nullptr);
    const double numeric = (lp - lm) / (double(hi) - double(lo));
    EXPECT_NEAR(g[i], numeric, std::max(1e-4, 1e-3 * std::abs(numeric))) << "element " << i;
  }
}

// Gaussian NLL and MSE on (N=2, C, 1, 3) with mask [1, 0, 1]; masked targets are NaN and
// garbage, so a masked point that leaked into the sum would make it NaN or huge.
struct SimpleCase {
  std::vector<float> y{0.5f, std::numeric_limits<float>::quiet_NaN(), -2.0f,  //
                       3.0f, 1e30f, 0.0f};
  std::vector<float> mask{1, 0, 1};
};

double gaussian_nll(double mean, double log_var, double y) {
  return 0.5 * (std::log(2.0 * M_PI) + log_var + (y - mean) * (y - mean) / std::exp(log_var));
}

// Closed forms in double from the same float inputs: 1e-12 relative (only summation order differs).
TEST(ModelLoss, GaussianMatchesClosedFormAndItsGradient) {
  auto be = make_cpu_backend(2);
  const SimpleCase c;
  // Per sample: means of the 3 points, then log variances.
  const std::vector<float> out = {0.0f, 5.0f, -1.0f, 0.2f, 9.0f, -3.0f,  //
                                  2.0f, 0.0f, 0.5f, -0.7f, 0.0f, 1.5f};
  Tensor o = make_tensor(*be, Shape{2, 2, 1, 3}, out), y = make_tensor(*be, Shape{2, 1, 1, 3}, c.y),
         m = make_tensor(*be, Shape{1, 1, 1, 3}, c.mask), d(*be, Shape{2, 2, 1, 3});
  const double want = (gaussian_nll(out[0], out[3], c.y[0]) + gaussian_nll(out[2], out[5], c.y[2]) +
                       gaussian_nll(out[6], out[9], c.y[3]) + gaussian_nll(out[8], out[11], c.y[5])) /
                      4.0;
  const double got = gaussian_nll_loss(*be, o, y, m, &d);
  EXPECT_NEAR(got, want, 1e-12 * std::abs(want));
  const auto g = d.to_host();
  // dL/dmean = -(y - mean) / var / count; dL/dlogvar = 0.5 (1 - (y - mean)^2 / var) / count.
  EXPECT_NEAR(g[0], -(0.5 - 0.0) / std::exp(0.2) / 4.0, 1e-7);
  EXPECT_NEAR(g[3], 0.5 * (1.0 - 0.25 / std::exp(0.2)) / 4.0, 1e-7);
  EXPECT_EQ(g[1], 0.0f);  // masked point, both channels
  EXPECT_EQ(g[4], 0.0f);
  EXPECT_EQ(g[7], 0.0f);
  EXPECT_EQ(g[10], 0.0f);
  EXPECT_THROW(gaussian_nll_loss(*be, Tensor(*be, Shape{2, 3, 1, 3}), y, m, nullptr), Error);  // wrong channels
}

TEST(ModelLoss, MseMatchesClosedFormAndItsGradient) {
  auto be = make_cpu_backend(2);
  const SimpleCase c;
  const std::vector<float> out = {1.0f, 4.0f, -2.5f, 2.0f, 0.0f, 0.25f};
  Tensor o = make_tensor(*be, Shape{2, 1, 1, 3}, out), y = make_tensor(*be, Shape{2, 1, 1, 3}, c.y),
         m = make_tensor(*be, Shape{1, 1, 1, 3}, c.mask), d(*be, Shape{2, 1, 1, 3});
  // (1 - 0.5)^2 + (-2.5 + 2)^2 + (2 - 3)^2 + (0.25 - 0)^2 = 0.25 + 0.25 + 1 + 0.0625, over 4.
  EXPECT_DOUBLE_EQ(mse_loss(*be, o, y, m, &d), 1.5625 / 4.0);
  EXPECT_EQ(d.to_host(), (std::vector<float>{2 * 0.5f / 4, 0.0f, 2 * -0.5f / 4, 2 * -1.0f / 4, 0.0f, 2 * 0.25f / 4}));
}

// Both new losses' gradients against central differences (as the Bernoulli-Gamma test above:
// step 1e-3, the actual float step as divisor; the losses are smooth quadratics/exponentials
// of O(1) inputs, truncation < 1e-6). Relative 1e-3 with a floor of 1e-5.
TEST(ModelLoss, GaussianAndMseGradientsMatchFiniteDifferences) {
  auto be = make_cpu_backend(2);
  for (LossKind kind : {LossKind::kGaussian, LossKind::kMse}) {
    const Shape s{2, loss_channels(kind), 2, 3};
    std::vector<float> out = test::random_values(size_t(s.size()), 31, -1.0f, 1.0f);
    Tensor o = make_tensor(*be, s, out);
    Tensor y = make_tensor(*be, Shape{2, 1, 2, 3}, test::random_values(12, 32, -2.0f, 2.0f));
    Tensor mask = make_tensor(*be, Shape{1, 1, 2, 3}, {1, 0, 1, 1, 1, 0});
    Tensor d(*be, s);
    masked_loss(*be, kind, o, y, mask, &d);
    const auto g = d.to_host();
    for (size_t i = 0; i < out.size(); ++i) {
      std::vector<float> v = out;
      v[i] = out[i] + 1e-3f;
      const float hi = v[i];
      o.upload(v.data());
      const double lp = masked_loss(*be, kind, o, y, mask, nullptr);
      v[i] = out[i] - 1e-3f;
      const float lo = v[i];
      o.upload(v.data());
      const double lm = masked_loss(*be, kind, o, y, mask, nullptr);
      const double numeric = (lp - lm) / (double(hi) - double(lo));
      EXPECT_NEAR(g[i], numeric, std::max(1e-5, 1e-3 * std::abs(numeric))) << loss_name(kind) << " element " << i;
    }
  }
}

// A modelled box's missing day (mask 1, NaN target) adds nothing: every loss equals the same loss
// with that point masked out (closed form: the mean over the other valid points), its gradient is
// 0, the others' gradients match finite differences. A batch with no valid target is loss 0.
TEST(ModelLoss, NaNTargetsAtModelledPointsAreSkipped) {
  auto be = make_cpu_backend(2);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (LossKind kind : {LossKind::kBernoulliGamma, LossKind::kGaussian, LossKind::kMse}) {
    const int C = loss_channels(kind);
    const Shape s{2, C, 1, 3};
    std::vector<float> out = test::random_values(size_t(s.size()), 41, -1.0f, 1.0f);
    if (kind == LossKind::kBernoulliGamma)
      for (int n = 0; n < 2; ++n)
        for (int i = 0; i < 3; ++i) out[size_t(n * 9 + i)] = 0.3f + 0.1f * float(i);  // p in (0, 1)
    Tensor o = make_tensor(*be, s, out);
    const std::vector<float> yv{1.5f, nan, 0.0f, 2.0f, 0.7f, nan};  // NaN at modelled points
    Tensor y = make_tensor(*be, Shape{2, 1, 1, 3}, yv);
    Tensor mask = make_tensor(*be, Shape{1, 1, 1, 3}, {1, 1, 1});
    Tensor d(*be, s);
    const double l = masked_loss(*be, kind, o, y, mask, &d);
    ASSERT_TRUE(std::isfinite(l)) << loss_name(kind);
    // The same points one sample at a time with the NaN point masked: sample 0 masks point 1,
    // sample 1 masks point 2; 2 valid points each, so the mean of the two equals the 4-point mean.
    double want = 0;
    for (int n = 0; n < 2; ++n) {
      Tensor on = make_tensor(*be, Shape{1, C, 1, 3}, {out.begin() + n * 3 * C, out.begin() + (n + 1) * 3 * C});
      Tensor yn = make_tensor(*be, Shape{1, 1, 1, 3}, {yv.begin() + n * 3, yv.begin() + (n + 1) * 3});
      Tensor mn = make_tensor(*be, Shape{1, 1, 1, 3}, n == 0 ? std::vector<float>{1, 0, 1} : std::vector<float>{1, 1, 0});
      want += masked_loss(*be, kind, on, yn, mn, nullptr) / 2;
    }
    EXPECT_NEAR(l, want, 1e-9 * std::abs(want)) << loss_name(kind);
    const auto g = d.to_host();
    for (int c = 0; c < C; ++c) {
      EXPECT_EQ(g[size_t(0 * 3 * C + c * 3 + 1)], 0.0f) << loss_name(kind);
      EXPECT_EQ(g[size_t(1 * 3 * C + c * 3 + 2)], 0.0f) << loss_name(kind);
    }
    for (size_t i = 0; i < out.size(); ++i) {
      std::vector<float> v = out;
      v[i] = out[i] + 1e-3f;
      const float hi = v[i];
      o.upload(v.data());
      const double lp = masked_loss(*be, kind, o, y, mask, nullptr);
      v[i] = out[i] - 1e-3f;
      const float lo = v[i];
      o.upload(v.data());
      const double lm = masked_loss(*be, kind, o, y, mask, nullptr);
      const double numeric = (lp - lm) / (double(hi) - double(lo));
      EXPECT_NEAR(g[i], numeric, std::max(1e-4, 1e-3 * std::abs(numeric))) << loss_name(kind) << " element " << i;
    }
    o.upload(out.data());
    Tensor all_nan = make_tensor(*be, Shape{2, 1, 1, 3}, std::vector<float>(6, nan));
    EXPECT_EQ(masked_loss(*be, kind, o, all_nan, mask, &d), 0.0) << loss_name(kind);
    for (float v : d.to_host()) EXPECT_EQ(v, 0.0f) << loss_name(kind);
  }
}

// The trainer's form (masked_loss_accumulate: the valid points counted on the host, the loss
// added into backend memory) against masked_loss on the CPU, for every loss, with NaN targets at
// modelled points and a masked point: the same gradient (the trainer steps on it; a wrong 1/valid
// would pass every trainer test, Adam being blind to its scale) and the same mean, added times
// the weight onto what acc held, the first non-finite step left at none. Both evaluate the same
// float terms in double, so 1e-12 relative covers the order of the sums.
TEST(ModelLoss, AccumulatedFormMatchesMaskedLoss) {
  auto be = make_cpu_backend(2);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (LossKind kind : {LossKind::kBernoulliGamma, LossKind::kGaussian, LossKind::kMse}) {
    const int C = loss_channels(kind);
    const Shape s{2, C, 1, 4};
    std::vector<float> out = test::random_values(size_t(s.size()), 43, -1.0f, 1.0f);
    if (kind == LossKind::kBernoulliGamma)
      for (int n = 0; n < 2; ++n)
        for (int i = 0; i < 4; ++i) out[size_t(n * 3 * 4 + i)] = 0.2f + 0.15f * float(i);  // p in (0, 1)
    Tensor o = make_tensor(*be, s, out);
    const std::vector<float> yv{1.5f, nan, 0.0f, 3.0f, 2.0f, 0.7f, nan, 0.0f};
    const std::vector<float> mv{1, 1, 1, 0};  // the last point sea: its target is never read
    Tensor y = make_tensor(*be, Shape{2, 1, 1, 4}, yv);
    Tensor mask = make_tensor(*be, Shape{1, 1, 1, 4}, mv);
    const int64_t valid = count_valid_points(mv.data(), yv.data(), 2, 4);
    EXPECT_EQ(valid, 4);  // 3 land points a sample, one NaN each
    Tensor want_d(*be, s), got_d(*be, s);
    const double want = masked_loss(*be, kind, o, y, mask, &want_d);
    LossAccumulator acc(*be);
    acc.reset(0.25);
    masked_loss_accumulate(*be, kind, o, y, mask, valid, 3.0, 7, acc.data(), &got_d);
    const auto [sum, first_bad] = acc.read();
    EXPECT_NEAR(sum, 0.25 + 3.0 * want, 1e-12 * std::abs(3.0 * want) + 1e-15) << loss_name(kind);
    EXPECT_LT(first_bad, 0) << loss_name(kind);
    const auto gw = want_d.to_host(), gg = got_d.to_host();
    for (size_t i = 0; i < gw.size(); ++i)
      EXPECT_NEAR(gg[i], gw[i], 1e-6 * std::abs(gw[i]) + 1e-12) << loss_name(kind) << " element " << i;
    // A non-finite loss names its step, the first one only (the trainer's report of where).
    std::vector<float> bad = out;
    bad[size_t(C * 4)] = std::numeric_limits<float>::infinity();  // sample 1, channel 0, point 0 (target 2.0)
    Tensor ob = make_tensor(*be, s, bad);
    masked_loss_accumulate(*be, kind, ob, y, mask, valid, 1.0, 9, acc.data(), nullptr);
    masked_loss_accumulate(*be, kind, ob, y, mask, valid, 1.0, 11, acc.data(), nullptr);
    EXPECT_EQ(acc.read()[1], 9.0) << loss_name(kind);
  }
}

TEST(ModelLoss, NamesParseAndUnknownIsAUsageError) {
  EXPECT_EQ(parse_loss("gaussian"), LossKind::kGaussian);
  EXPECT_EQ(loss_channels(parse_loss("bernoulli_gamma")), 3);
  EXPECT_EQ(loss_channels(parse_loss("mse")), 1);
  EXPECT_THROW(parse_loss("huber"), UsageError);
}

}  // namespace
}  // namespace ds::model
