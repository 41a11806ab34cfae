#include <gtest/gtest.h>

#include <cmath>

#include "predict/continuous.h"
#include "predict/window.h"

using namespace ds;

TEST(Continuous, GaussianMeanAndSdFromLogVarianceMaskedPointsNaN) {
  // 2 days, 2 channels, 3 points; point 2 is not modelled.
  const std::vector<float> raw{1.0f, 2.0f, 3.0f, 0.0f, std::log(4.0f), 9.0f,   // day 0: mean, log var
                               -1.0f, -2.0f, -3.0f, std::log(0.25f), 0.0f, 9.0f};
  const ContinuousPrediction p = continuous_prediction(raw, 2, 3, {1, 1, 0});
  ASSERT_EQ(p.mean.size(), 6u);
  EXPECT_FLOAT_EQ(p.mean[0], 1.0f);
  EXPECT_FLOAT_EQ(p.mean[4], -2.0f);
  EXPECT_FLOAT_EQ(p.sd[0], 1.0f);
  EXPECT_FLOAT_EQ(p.sd[1], 2.0f);
  EXPECT_FLOAT_EQ(p.sd[3], 0.5f);
  EXPECT_TRUE(std::isnan(p.mean[2]) && std::isnan(p.sd[5]));
  const ContinuousPrediction m = continuous_prediction({5.0f, 6.0f, 7.0f}, 1, 3, {1, 0, 1});
  EXPECT_TRUE(m.sd.empty());
  EXPECT_FLOAT_EQ(m.mean[2], 7.0f);
  EXPECT_TRUE(std::isnan(m.mean[1]));
}

TEST(Window, CropsEveryDayToTheObservationWindowWithItsCoordinates) {
  StoreMeta m;
  m.predictand_lat = {0, 1, 2, 3};
  m.predictand_lon = {10, 11, 12};
  m.obs_row0 = 1, m.obs_col0 = 1, m.obs_rows = 2, m.obs_cols = 2;
  const Window w = observation_window(m);
  std::vector<int> v(2 * 12);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>(i);
  EXPECT_EQ(crop_to_window(v, w), (std::vector<int>{4, 5, 7, 8, 16, 17, 19, 20}));
  EXPECT_EQ(window_lat(m, w), (std::vector<double>{1, 2}));
  EXPECT_EQ(window_lon(m, w), (std::vector<double>{11, 12}));
  m.obs_rows = 0;  // no window recorded: the whole output grid
  EXPECT_TRUE(observation_window(m).whole());
  EXPECT_EQ(crop_to_window(v, observation_window(m)), v);
}
