#include <gtest/gtest.h>

#include <cmath>

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
                        0.0f, 2.0f / 86400, 1.0f / 86400, 1.0f / 86400};  // day 2
  to_mm_per_day(pr, "kg m-2 s-1", "pr.nc");
  EXPECT_NEAR(pr[2], 5.0f, 1e-5);
  const auto mask = land_mask(pr, 4);
  EXPECT_EQ(mask, (std::vector<uint8_t>{1, 1, 1, 0}));
  const auto y = wet_day_target(pr, mask, 0.99);
  EXPECT_FLOAT_EQ(y[0], 0.0f);               // 0.5 mm: dry
  EXPECT_NEAR(y[1], 0.0f, 1e-5);             // exactly at the threshold: wet with amount 0
  EXPECT_NEAR(y[2], 5.0f - 0.99f, 1e-5);
  EXPECT_FLOAT_EQ(y[3], 0.0f);               // ocean
  EXPECT_FLOAT_EQ(y[7], 0.0f);               // ocean on every day
  EXPECT_NEAR(y[5], 2.0f - 0.99f, 1e-5);
  std::vector<float> mm{1, 2};
  to_mm_per_day(mm, "mm/day", "f");
  EXPECT_FLOAT_EQ(mm[1], 2.0f);
  EXPECT_THROW(to_mm_per_day(mm, "m", "f"), InputError);
}
