#include <gtest/gtest.h>

#include <cmath>

#include "predict/precipitation.h"

using namespace ds;

namespace {
// The observed target as predict hands it to the thresholds, a byte a value (observed_wet).
std::vector<uint8_t> wet_bytes(const std::vector<float>& target) {
  std::vector<uint8_t> b;
  for (float v : target) b.push_back(observed_wet(v));
  return b;
}
}  // namespace

TEST(Precipitation, FrequencyAdaptedThresholdReproducesTrainingWetFrequency) {
  // One point, ten training days, p = 0.05 .. 0.95; 3 observed wet days -> the threshold is the
  // third largest p (0.75), so exactly 3 training days are predicted wet.
  BernoulliGammaParams train;
  train.npoints = 1;
  std::vector<float> target;
  for (int t = 0; t < 10; ++t) {
    train.p.push_back(0.05f + 0.1f * t);
    target.push_back(t % 3 == 0 && t > 0 ? 2.0f : 0.0f);  // days 3, 6, 9 wet
  }
  const auto thr = frequency_adapted_thresholds(train, wet_bytes(target));
  EXPECT_FLOAT_EQ(thr[0], 0.75f);
  int wet = 0;
  for (float p : train.p) wet += p >= thr[0];
  EXPECT_EQ(wet, 3);
  // Never wet -> never predicted wet; always wet -> always.
  EXPECT_GT(frequency_adapted_thresholds(train, wet_bytes(std::vector<float>(10, 0.0f)))[0], 1.0f);
  EXPECT_EQ(frequency_adapted_thresholds(train, wet_bytes(std::vector<float>(10, 1.0f)))[0], 0.0f);
}

// The network's raw output (day, channel, point) as the heads give it: p, log alpha, log beta.
// exp on the host in float: 1e-6 relative covers its rounding against the double reference.
TEST(Precipitation, RawNetworkOutputBecomesParametersDayByDay) {
  const size_t hw = 2;
  // day 0: p 0.2 0.9, log alpha 0 log 2, log beta log 3 -1; day 1: ocean (NaN) at point 1
  const std::vector<float> raw{0.2f, 0.9f, 0.0f, std::log(2.0f), std::log(3.0f), -1.0f,
                               0.5f, NAN,  1.0f, NAN,            0.5f,           NAN};
  const BernoulliGammaParams b = bernoulli_gamma_params(raw, hw);
  EXPECT_EQ(b.npoints, hw);
  EXPECT_EQ(b.ntime(), 2u);
  EXPECT_FLOAT_EQ(b.p[0], 0.2f);
  EXPECT_FLOAT_EQ(b.p[1], 0.9f);
  EXPECT_FLOAT_EQ(b.p[2], 0.5f);
  EXPECT_NEAR(b.alpha[0], 1.0, 1e-6);
  EXPECT_NEAR(b.alpha[1], 2.0, 2e-6);
  EXPECT_NEAR(b.beta[0], 3.0, 3e-6);
  EXPECT_NEAR(b.beta[1], std::exp(-1.0), 1e-6);
  EXPECT_NEAR(b.alpha[2], std::exp(1.0), 3e-6);
  EXPECT_NEAR(b.beta[2], std::exp(0.5), 2e-6);
  EXPECT_TRUE(std::isnan(b.p[3]) && std::isnan(b.alpha[3]) && std::isnan(b.beta[3]));
}

TEST(Precipitation, DeterministicAndExpected) {
  BernoulliGammaParams b;
  b.npoints = 2;
  b.p = {0.7f, 0.3f, NAN, 0.5f};
  b.alpha = {2, 3, NAN, 1};
  b.beta = {1.5f, 2, NAN, 4};
  const auto det = deterministic_precipitation(b, {0.5f, 0.5f}, 0.99);
  EXPECT_NEAR(det[0], 2 * 1.5 + 0.99, 1e-6);
  EXPECT_EQ(det[1], 0.0f);
  EXPECT_TRUE(std::isnan(det[2]));
  EXPECT_NEAR(det[3], 4 + 0.99, 1e-6);  // p exactly at the threshold counts as wet
  const auto ex = expected_precipitation(b, 0.99);
  EXPECT_NEAR(ex[0], 0.7 * (3 + 0.99), 1e-6);
  EXPECT_NEAR(ex[1], 0.3 * (6 + 0.99), 1e-6);
}

// The members' sample statistics converge to the distribution's: wet frequency p and wet mean
// alpha*beta + shift. 20000 draws: the standard error of the frequency is sqrt(.3*.7/2e4) = 0.0032
// and of the mean about 2.4/sqrt(6000) = 0.03, so 5-sigma bounds are 0.016 and 0.16.
TEST(Precipitation, StochasticMembersFollowTheDistributionAndAreReproducible) {
  BernoulliGammaParams b;
  b.npoints = 1;
  b.p.assign(2000, 0.3f);
  b.alpha.assign(2000, 0.8f);
  b.beta.assign(2000, 3.0f);
  const auto m = stochastic_precipitation(b, 10, 42, 0.99);
  ASSERT_EQ(m.size(), 20000u);
  double wet = 0, sum = 0;
  for (float v : m)
    if (v > 0) wet += 1, sum += v;
  EXPECT_NEAR(wet / m.size(), 0.3, 0.016);
  EXPECT_NEAR(sum / wet, 0.8 * 3.0 + 0.99, 0.16);
  for (float v : m) EXPECT_TRUE(v == 0.0f || v >= 0.99f);
  EXPECT_EQ(stochastic_precipitation(b, 10, 42, 0.99), m);
  // Member 0 does not depend on how many members are drawn.
  const auto one = stochastic_precipitation(b, 1, 42, 0.99);
  EXPECT_TRUE(std::equal(one.begin(), one.end(), m.begin()));
  EXPECT_NE(stochastic_precipitation(b, 1, 43, 0.99), one);
  // Every bit of the seed counts: 2^32 + 42 draws other members than 42 (seed_seq keeps 32 bits
  // of a value), and so does 42 * 2^32, which has no low bits at all.
  EXPECT_NE(stochastic_precipitation(b, 1, (uint64_t(1) << 32) + 42, 0.99), one);
  EXPECT_NE(stochastic_precipitation(b, 1, uint64_t(42) << 32, 0.99), stochastic_precipitation(b, 1, 0, 0.99));
}

// predict draws the members a block of days at a time: blocks of 1, 2 and the rest give exactly
// the members of one call over all the days (each member's generator carries over), with ocean
// points (NaN p) among them that draw nothing.
TEST(Precipitation, StochasticMembersDrawnInBlocksOfDaysEqualOneDraw) {
  BernoulliGammaParams b;
  b.npoints = 3;
  const size_t days = 7;
  for (size_t t = 0; t < days; ++t)
    for (size_t k = 0; k < b.npoints; ++k) {
      b.p.push_back(k == 1 ? NAN : 0.2f + 0.1f * t);
      b.alpha.push_back(k == 1 ? NAN : 0.5f + 0.2f * k);
      b.beta.push_back(k == 1 ? NAN : 2.0f + t);
    }
  const int members = 3;
  const std::vector<float> whole = stochastic_precipitation(b, members, 7, 0.99);
  StochasticPrecipitation draws(members, 7, 0.99);
  std::vector<std::vector<float>> blocks;
  for (const auto& [first, n] : {std::pair<size_t, size_t>{0, 1}, {1, 2}, {3, 4}}) {
    BernoulliGammaParams part;
    part.npoints = b.npoints;
    const size_t a = first * b.npoints, e = (first + n) * b.npoints;
    part.p.assign(b.p.begin() + a, b.p.begin() + e);
    part.alpha.assign(b.alpha.begin() + a, b.alpha.begin() + e);
    part.beta.assign(b.beta.begin() + a, b.beta.begin() + e);
    blocks.push_back(draws.next(part));
    ASSERT_EQ(blocks.back().size(), members * n * b.npoints);
  }
  const size_t per_member = days * b.npoints;
  size_t wet = 0;
  for (int m = 0; m < members; ++m) {
    size_t t0 = 0;
    for (const auto& blk : blocks) {
      const size_t n = blk.size() / members;
      for (size_t i = 0; i < n; ++i) {
        const float x = whole[m * per_member + t0 + i], y = blk[m * n + i];
        if (std::isnan(x)) {
          EXPECT_TRUE(std::isnan(y));
        } else {
          EXPECT_EQ(x, y) << "member " << m << " value " << t0 + i;
          wet += x > 0;
        }
      }
      t0 += n;
    }
  }
  EXPECT_GT(wet, 0u);  // the comparison covers wet amounts, not only zeros
}


// predict.plausible_ratio: the prediction's mean level within a factor either way of the training
// observations', both ends included; NaN (nothing modelled) and a dry training record are not
// plausible; 0 turns the check off.
TEST(Precipitation, PlausibleLevelIsWithinTheFactorEitherWay) {
  EXPECT_TRUE(plausible_precipitation_level(2.5, 2.5, 5));
  EXPECT_TRUE(plausible_precipitation_level(12.5, 2.5, 5));
  EXPECT_TRUE(plausible_precipitation_level(0.5, 2.5, 5));
  EXPECT_FALSE(plausible_precipitation_level(12.6, 2.5, 5));
  EXPECT_FALSE(plausible_precipitation_level(0.49, 2.5, 5));
  EXPECT_FALSE(plausible_precipitation_level(6003, 2.586, 5));  // output biases off by 8 (tests/cli/faults_provenance.sh)
  EXPECT_FALSE(plausible_precipitation_level(0.0, 2.5, 5));
  EXPECT_FALSE(plausible_precipitation_level(NAN, 2.5, 5));
  EXPECT_FALSE(plausible_precipitation_level(1.0, 0.0, 5));
  EXPECT_TRUE(plausible_precipitation_level(12.6, 2.5, 6));
  EXPECT_TRUE(plausible_precipitation_level(6003, 2.586, 0));
}

// The reference is the training observations' mean month by month, weighted by the predicted
// days: a dry season predicted from a model trained on the whole year is compared with that
// season (against the annual mean, 1.5 mm/day in July would be 0.14 times it, below a fifth).
// Amounts under the wet-day threshold count as 0, as the expected precipitation counts them;
// boxes outside the mask and months the training never held are left out.
TEST(Precipitation, LevelReferenceIsTheTrainingMeanOfThePredictedMonths) {
  const std::vector<uint8_t> mask{1, 1, 0};  // the third box is ocean
  // Training: 2 January days of 20 mm, 2 July days of 1.5 mm and one of 0.5 (under 0.99: 0).
  const std::vector<float> obs{20, 20, 999, 20, NAN, 999, 1.5f, 1.5f, 999, 1.5f, 1.5f, 999, 0.5f, 0.5f, 999};
  const std::vector<int> obs_months{1, 1, 7, 7, 7};
  PrecipitationLevel level;
  level.add_observed(obs.data(), 5, obs_months.data(), mask, 0.99);
  // Predicted: 3 July days of 1 mm, and an April day (never trained) of 100 mm.
  const std::vector<float> pred{1, 1, 999, 1, 1, 999, 1, 1, 999, 100, 100, 999};
  const std::vector<int> pred_months{7, 7, 7, 4};
  level.add_predicted(pred.data(), 4, pred_months.data(), mask);
  EXPECT_DOUBLE_EQ(level.predicted_mean(), 1.0);
  EXPECT_DOUBLE_EQ(level.reference_mean(), 1.0);  // July: (4 x 1.5 + 2 x 0) / 6 boxes-days
  EXPECT_EQ(level.predicted_days(), 3u);
  EXPECT_TRUE(plausible_precipitation_level(level.predicted_mean(), level.reference_mean(), 5));

  // Adding a January day: each month's mean weighted by its predicted days (3 July, 1 January).
  const std::vector<float> jan{4, 4, 999};
  const int jan_month = 1;
  level.add_predicted(jan.data(), 1, &jan_month, mask);
  EXPECT_DOUBLE_EQ(level.reference_mean(), (3 * 1.0 + 1 * 20.0) / 4);
  EXPECT_DOUBLE_EQ(level.predicted_mean(), (6 * 1.0 + 2 * 4.0) / 8);
  EXPECT_EQ(level.predicted_days(), 4u);

  // No shared month (a model of January and July given an April day): the prediction over all its
  // days against the training's whole mean, (3 x 20 + 4 x 1.5 + 2 x 0) / 9 box-days; it was not
  // compared at all, and a DJF model's 25,000 mm/day of summer were written.
  PrecipitationLevel none;
  none.add_observed(obs.data(), 5, obs_months.data(), mask, 0.99);
  const int april = 4;
  none.add_predicted(pred.data() + 9, 1, &april, mask);
  EXPECT_FALSE(none.shares_months());
  EXPECT_TRUE(level.shares_months());
  EXPECT_DOUBLE_EQ(none.reference_mean(), (3 * 20.0 + 4 * 1.5) / 9);
  EXPECT_DOUBLE_EQ(none.predicted_mean(), 100.0);
  EXPECT_EQ(none.predicted_days(), 1u);
  EXPECT_FALSE(plausible_precipitation_level(none.predicted_mean(), none.reference_mean(), 5));
  EXPECT_TRUE(plausible_precipitation_level(none.predicted_mean(), none.reference_mean(), 15));
  PrecipitationLevel empty;  // nothing predicted: nothing to compare
  empty.add_observed(obs.data(), 5, obs_months.data(), mask, 0.99);
  EXPECT_EQ(empty.predicted_days(), 0u);
}
