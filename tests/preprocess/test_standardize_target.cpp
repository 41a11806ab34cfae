#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "io/error.h"
#include "preprocess/standardize.h"
#include "preprocess/target.h"

using namespace ds;

TEST(Standardize, TrainingYearsOnlyAndSampleStandardDeviation) {
  // Two boxes, five times; the last two times are not training and carry huge values that
  // must not influence the statistics.
  const std::vector<float> f{1, 10, 2, 10, 3, 10, 1000, -5, 2000, 7};
  const std::vector<bool> use{true, true, true, false, false};
  const auto s = fit_standardization(f, 2, use);
  EXPECT_FLOAT_EQ(s.mean[0], 2.0f);
  EXPECT_FLOAT_EQ(s.sd[0], 1.0f);  // sqrt(((1-2)^2 + 0 + (3-2)^2) / (3 - 1)) = 1: n - 1
  EXPECT_FLOAT_EQ(s.mean[1], 10.0f);
  EXPECT_FLOAT_EQ(s.sd[1], 1.0f);  // constant box: sd set to 1, not 0
  auto g = f;
  apply_standardization(s, g);
  EXPECT_FLOAT_EQ(g[0], -1.0f);
  EXPECT_FLOAT_EQ(g[4], 1.0f);
  EXPECT_FLOAT_EQ(g[1], 0.0f);
  EXPECT_FLOAT_EQ(g[6], 998.0f);
  EXPECT_THROW(fit_standardization(f, 2, {true, false, false, false, false}), InputError);
}

TEST(Target, UnitsThresholdAndMask) {
  std::vector<float> pr{0.5f / 86400, 0.99f / 86400, 5.0f / 86400, NAN,  // day 1
                        0.0f, 2.0f / 86400, 1.0f / 86400, NAN};          // day 2
  to_mm_per_day(pr, "kg m-2 s-1", "pr.nc");
  EXPECT_NEAR(pr[2], 5.0f, 1e-5);
  ObservedDays observed(4);
  observed.add(pr);
  EXPECT_EQ(observed.days(), 2u);
  const auto mask = observed.mask(0.9);
  EXPECT_EQ(mask, (std::vector<uint8_t>{1, 1, 1, 0}));
  const auto y = training_target(pr, mask, true, 0.99);
  EXPECT_FLOAT_EQ(y[0], 0.0f);               // 0.5 mm: dry
  EXPECT_NEAR(y[1], 0.0f, 1e-5);             // exactly at the threshold: wet with amount 0
  EXPECT_NEAR(y[2], 5.0f - 0.99f, 1e-5);
  EXPECT_TRUE(std::isnan(y[3]));             // ocean: not observed, NaN (the losses skip it)
  EXPECT_TRUE(std::isnan(y[7]));
  EXPECT_NEAR(y[5], 2.0f - 0.99f, 1e-5);
  std::vector<float> mm{1, 2};
  to_mm_per_day(mm, "mm/day", "f");
  EXPECT_FLOAT_EQ(mm[1], 2.0f);
  EXPECT_THROW(to_mm_per_day(mm, "m", "f"), InputError);
}

// A box observed on at least min_valid_fraction of the days is modelled; its missing days are NaN
// targets, and a temperature's target is its value.
TEST(Target, MaskFromObservedFractionAndNaNOnMissingDays) {
  // 10 days, 3 boxes: always observed, missing 1 day in 10, missing 2 days in 10.
  std::vector<float> t;
  for (int d = 0; d < 10; ++d) {
    t.push_back(10.0f + d);
    t.push_back(d == 3 ? NAN : 20.0f);
    t.push_back(d < 2 ? NAN : -1.5f);
  }
  ObservedDays observed(3);
  observed.add({t.begin(), t.begin() + 12});  // blocks of 4 and 6 days add up
  observed.add({t.begin() + 12, t.end()});
  EXPECT_EQ(observed.days(), 10u);
  EXPECT_EQ(observed.mask(0.9), (std::vector<uint8_t>{1, 1, 0}));
  EXPECT_EQ(observed.mask(0.8), (std::vector<uint8_t>{1, 1, 1}));
  EXPECT_EQ(observed.mask(1.0), (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(observed.mask(0.0), (std::vector<uint8_t>{1, 1, 1}));
  const auto mask = observed.mask(0.9);
  const auto y = training_target(t, mask, false, 0.99);
  EXPECT_FLOAT_EQ(y[0], 10.0f);              // not precipitation: the value itself, no threshold
  EXPECT_FLOAT_EQ(y[3 * 3 + 0], 13.0f);
  EXPECT_TRUE(std::isnan(y[3 * 3 + 1]));     // modelled box, missing day
  EXPECT_FLOAT_EQ(y[4 * 3 + 1], 20.0f);
  EXPECT_TRUE(std::isnan(y[5 * 3 + 2]));     // observed that day but not modelled
  auto obs = t;
  mask_observation(obs, mask);
  EXPECT_TRUE(std::isnan(obs[5 * 3 + 2]));
  EXPECT_FLOAT_EQ(obs[5 * 3 + 1], 20.0f);
  // A box never observed is never modelled, even with fraction 0.
  ObservedDays never(1);
  never.add({NAN, NAN});
  EXPECT_EQ(never.mask(0.0), (std::vector<uint8_t>{0}));
}

// Block-wise statistics equal the whole-record ones, whatever the blocks; NaN are skipped.
TEST(Standardize, RunningStatsMatchWholeRecordInAnyBlocks) {
  std::vector<float> f;
  const size_t fs = 3, nt = 101;
  for (size_t t = 0; t < nt; ++t)
    for (size_t k = 0; k < fs; ++k) f.push_back(static_cast<float>(50000 + 100 * std::sin(t * 0.7 + k) + k));
  const auto whole = fit_standardization(f, fs, std::vector<bool>(nt, true));
  for (size_t block : {1, 7, 64, 101}) {
    RunningStats rs(fs);
    for (size_t a = 0; a < nt; a += block) rs.add(&f[a * fs], std::min(block, nt - a));
    const auto s = rs.finish(false, "t");
    for (size_t k = 0; k < fs; ++k) {
      EXPECT_NEAR(s.mean[k], whole.mean[k], 1e-6 * 50000) << block;  // float32 storage of the mean
      EXPECT_NEAR(s.sd[k], whole.sd[k], 1e-5 * whole.sd[k]) << block;
    }
  }
  // Bit for bit the same whatever the blocks (preprocess.block_days must not change the store's
  // statistics).
  // Geopotential-like values (about 5.7e4, a few hundred apart) over 4096 boxes and 1000 days: in
  // float32 a mean is 0.004 wide, and a sum merged in other blocks lands on the other side of a
  // rounding boundary in a few boxes.
  const size_t big_fs = 4096, big_nt = 1000;
  std::vector<float> z(big_fs * big_nt);
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 300.0f);
  for (auto& v : z) v = 56700.0f + noise(rng);
  RunningStats ref(big_fs);
  ref.add(z.data(), big_nt);
  const auto r = ref.finish(false, "t");
  for (size_t block : {1, 7, 8, 100, 128, 300, 512}) {
    RunningStats rs(big_fs);
    for (size_t a = 0; a < big_nt; a += block) rs.add(&z[a * big_fs], std::min(block, big_nt - a));
    const auto s = rs.finish(false, "t");
    EXPECT_EQ(s.mean, r.mean) << block;
    EXPECT_EQ(s.sd, r.sd) << block;
  }
  // Per field: one mean and sd over every box and day, here of the values 1..6 (sd sqrt(3.5)).
  RunningStats pf(2);
  const std::vector<float> g{1, 2, 3, 4, NAN, 5, 6, NAN};
  pf.add(g.data(), 4);
  const auto s = pf.finish(true, "t");
  EXPECT_FLOAT_EQ(s.mean[0], 3.5f);
  EXPECT_FLOAT_EQ(s.mean[1], 3.5f);
  EXPECT_NEAR(s.sd[1], std::sqrt(3.5), 1e-6);
  RunningStats one(1);
  one.add(g.data(), 1);
  EXPECT_THROW(one.finish(false, "z@500.nc"), InputError);
}

// A field that does not change from day to day at any box (a constant written in its place)
// carries no weather: its sd was taken as 1 and it standardized to a fixed pattern, exit 0.
// One box that varies is enough to standardize by.
TEST(RunningStats, AFieldThatNeverChangesIsRefused) {
  const std::vector<float> constant = {5, 7, 5, 7, 5, 7};  // 3 days of 2 boxes, each box constant
  ds::RunningStats a(2);
  a.add(constant.data(), 3);
  try {
    a.finish(false, "ta@850.nc");
    ADD_FAILURE() << "a field constant in time standardized";
  } catch (const ds::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ta@850.nc: the field does not change from day to day at any grid box"),
              std::string::npos)
        << e.what();
  }
  const std::vector<float> one_varies = {5, 7, 5, 8, 5, 7};
  ds::RunningStats b(2);
  b.add(one_varies.data(), 3);
  const ds::Standardization s = b.finish(false, "ta@850.nc");
  EXPECT_EQ(s.sd[0], 1.0f);  // the constant box's sd stays 1, as before
}
