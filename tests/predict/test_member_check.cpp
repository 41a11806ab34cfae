#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "predict/member_check.h"

using namespace ds;

namespace {
// 3 boxes, the middle one ocean (NaN) and one unmasked land box; `days` days of two distributions:
// a light-tailed box (p 0.6, shape 2, scale 3) and a heavy-tailed one (p 0.3, shape 0.4, scale 12).
BernoulliGammaParams three_boxes(size_t days) {
  BernoulliGammaParams b;
  b.npoints = 3;
  for (size_t t = 0; t < days; ++t) {
    b.p.insert(b.p.end(), {0.6f, NAN, 0.3f});
    b.alpha.insert(b.alpha.end(), {2.0f, NAN, 0.4f});
    b.beta.insert(b.beta.end(), {3.0f, NAN, 12.0f});
  }
  return b;
}
const std::vector<uint8_t> kMask{1, 0, 1};

// A faulty sampler, as a wrong build could have it: the scale read as a rate, or the shift left out.
std::vector<float> faulty_draws(const BernoulliGammaParams& b, int members, bool scale_as_rate, double shift) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<float> out(members * b.p.size());
  for (int m = 0; m < members; ++m)
    for (size_t i = 0; i < b.p.size(); ++i) {
      if (!std::isfinite(b.p[i])) { out[m * b.p.size() + i] = NAN; continue; }
      std::gamma_distribution<double> g(b.alpha[i], scale_as_rate ? 1.0 / b.beta[i] : b.beta[i]);
      const double wet = u(rng), amount = g(rng);
      out[m * b.p.size() + i] = wet < b.p[i] ? float(amount + shift) : 0.0f;
    }
  return out;
}
}  // namespace

// The members StochasticPrecipitation draws average within a few standard errors of their
// distributions' closed-form mean, a block at a time; the seed is fixed, so the figure is too,
// and 4 sigmas leaves it margin while a faulty sampler (below) lies hundreds away.
TEST(MemberCheck, RightDrawsLieWithinTheirStandardErrors) {
  const int members = 5;
  const double shift = 0.99;
  MemberCheck check(members, shift);
  StochasticPrecipitation draws(members, 11, shift);
  const BernoulliGammaParams block = three_boxes(1000);
  for (size_t first = 0; first < 4000; first += 1000) check.add(block, draws.next(block), kMask, first);
  ASSERT_TRUE(check.checkable());  // 5 members x 4000 days x (0.6 + 0.3) = 18000 wet draws
  EXPECT_LT(std::abs(check.mean_sigmas()), 4) << check.members_mean() << " vs " << check.expected_mean();
  // The closed form: (0.6 (2 * 3 + 0.99) + 0.3 (0.4 * 12 + 0.99)) / 2 per modelled value.
  EXPECT_NEAR(check.expected_mean(), (0.6 * 6.99 + 0.3 * 5.79) / 2, 1e-6);
}

TEST(MemberCheck, AFaultySamplerIsManyStandardErrorsOff) {
  const int members = 5;
  const BernoulliGammaParams b = three_boxes(4000);
  MemberCheck rate(members, 0.99), no_shift(members, 0.99);
  rate.add(b, faulty_draws(b, members, true, 0.99), kMask, 0);
  no_shift.add(b, faulty_draws(b, members, false, 0.0), kMask, 0);
  EXPECT_LT(rate.mean_sigmas(), -kMemberMeanSigmas);
  EXPECT_LT(no_shift.mean_sigmas(), -kMemberMeanSigmas);
  // The same faulty draws, checked against the distribution they do follow, pass.
  MemberCheck unshifted(members, 0.0);
  unshifted.add(b, faulty_draws(b, members, false, 0.0), kMask, 0);
  EXPECT_LT(std::abs(unshifted.mean_sigmas()), 4);
}

// Too few expected wet draws for the normal approximation: no verdict (0), whatever the draws.
TEST(MemberCheck, FewWetDrawsAreNotJudged) {
  const BernoulliGammaParams b = three_boxes(100);  // 2 members x 100 days x 0.9: 180 wet draws
  MemberCheck check(2, 0.99);
  check.add(b, faulty_draws(b, 2, true, 0.99), kMask, 0);
  EXPECT_FALSE(check.checkable());
  EXPECT_EQ(check.mean_sigmas(), 0);
}

// The largest draw over the modelled boxes with where it lies: member, day (counted over the
// blocks) and box, and the distribution it came from; masked boxes never count, however large.
TEST(MemberCheck, LargestDrawNamesMemberDayAndBox) {
  BernoulliGammaParams b;
  b.npoints = 2;
  b.p = {1, 1, 1, 1};
  b.alpha = {1, 2, 1, 2};
  b.beta = {3, 4, 3, 4};
  const std::vector<uint8_t> mask{1, 0};
  // member 0: days 0, 1; member 1: days 0, 1 (point 1 unmasked: 900 is ignored)
  const std::vector<float> first_block{5, 900, 7, 900, 6, 900, 40, 900};
  MemberCheck check(2, 0.99);
  check.add(b, first_block, mask, 0);
  check.add(b, {1, 900, 2, 900, 3, 900, 4, 900}, mask, 2);
  const MemberExtreme& top = check.largest();
  EXPECT_EQ(top.value, 40);
  EXPECT_EQ(top.member, 1);
  EXPECT_EQ(top.day, 1u);
  EXPECT_EQ(top.point, 0u);
  EXPECT_EQ(top.shape, 1);
  EXPECT_EQ(top.scale, 3);
}
