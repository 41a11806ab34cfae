#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "evaluate/baselines.h"
#include "evaluate/continuous_scores.h"
#include "io/training_store.h"
#include "support/test_support.h"

using namespace ds;

namespace {
// Observations at 3 points over 4 days; point 2 is not modelled, day 1 of point 1 is missing.
const std::vector<float> kObs{1, 10, NAN,  //
                              2, NAN, NAN,  //
                              3, 30, NAN,  //
                              4, 40, NAN};
const std::vector<uint8_t> kMask{1, 1, 0};
std::vector<float> transform(float a, float b) {
  std::vector<float> v(kObs.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::isfinite(kObs[i]) ? a * kObs[i] + b : 99.0f;  // 99 where not observed
  return v;
}
}  // namespace

TEST(ContinuousScores, ClosedFormBiasRmsePearsonSdRatio) {
  const ContinuousEvaluation e = evaluate_continuous(
      kObs, 3, kMask, {{"shift", transform(1, 2)}, {"double", transform(2, 0)}, {"flip", transform(-1, 0)}}, "tas", "degC");
  ASSERT_EQ(e.methods.size(), 3u);
  EXPECT_EQ(e.ndays, 4u);
  EXPECT_DOUBLE_EQ(e.observed_mean[0], 2.5);
  EXPECT_NEAR(e.observed_mean[1], 80.0 / 3, 1e-12);  // the missing day is skipped
  EXPECT_TRUE(std::isnan(e.observed_mean[2]));
  // obs + 2: bias 2, RMSE 2, correlation 1, same spread, at every box.
  const auto& shift = e.methods[0];
  EXPECT_NEAR(shift.domain.at("bias"), 2.0, 1e-12);
  EXPECT_NEAR(shift.domain.at("RMSE"), 2.0, 1e-12);
  EXPECT_NEAR(shift.domain.at("Pearson"), 1.0, 1e-12);
  EXPECT_NEAR(shift.domain.at("sd_ratio"), 1.0, 1e-12);
  // 2 obs: bias = mean, RMSE = sqrt(mean(obs^2)), twice the spread.
  const auto& dbl = e.methods[1];
  EXPECT_NEAR(dbl.bias[0], 2.5, 1e-12);
  EXPECT_NEAR(dbl.rmse[0], std::sqrt(30.0 / 4), 1e-12);
  EXPECT_NEAR(dbl.rmse[1], std::sqrt(2600.0 / 3), 1e-9);
  EXPECT_NEAR(dbl.domain.at("bias"), (2.5 + 80.0 / 3) / 2, 1e-9);
  EXPECT_NEAR(dbl.domain.at("sd_ratio"), 2.0, 1e-12);
  // -obs: anticorrelated.
  EXPECT_NEAR(e.methods[2].domain.at("Pearson"), -1.0, 1e-12);
  EXPECT_TRUE(std::isnan(e.methods[2].bias[2]));  // never scored off the mask

  const auto j = nlohmann::json::parse(continuous_json(e));
  EXPECT_EQ(j["units"], "degC");
  EXPECT_NEAR(j["methods"]["shift"]["RMSE"].get<double>(), 2.0, 1e-12);
  EXPECT_EQ(continuous_csv(e).substr(0, 40), "method,members,bias,RMSE,Pearson,sd_rati");
}

TEST(ContinuousScores, ConstantPredictionHasNoCorrelationAndZeroSpread) {
  const ContinuousEvaluation e = evaluate_continuous(kObs, 3, kMask, {{"const", std::vector<float>(12, 5.0f)}}, "tas", "K");
  EXPECT_TRUE(std::isnan(e.methods[0].domain.at("Pearson")));
  EXPECT_DOUBLE_EQ(e.methods[0].domain.at("sd_ratio"), 0.0);
  EXPECT_TRUE(nlohmann::json::parse(continuous_json(e))["methods"]["const"]["Pearson"].is_null());
}

TEST(Baselines, TemperatureBaselinesStayInTheObservationsUnitsBelowZero) {
  // A winter temperature store: obs = -5 + 2 x0 degC at one box, with a box observed on most
  // days only. The linear baseline follows x0 below 0 (no precipitation floor); climatology is
  // the training mean of the observed days.
  test::TempDir d;
  StoreMeta m;
  m.channels = {"ta@850"};
  m.predictor_lon = {0, 2};
  m.predictor_lat = {40};
  m.predictand_lon = {0, 0.5};
  m.predictand_lat = {40};
  m.predictand = "tas";
  m.predictand_units = "degC";
  m.set_window_to_output_grid();
  m.mask = {1, 1};
  m.mean = {0, 0};
  m.sd = {1, 1};
  std::mt19937_64 rng(3);
  std::normal_distribution<float> n01;
  auto make = [&](int n, std::vector<float>& x, std::vector<float>& obs, std::vector<int64_t>& t) {
    for (int i = 0; i < n; ++i) {
      const float a = n01(rng), b = n01(rng);
      x.push_back(a), x.push_back(b);
      obs.push_back(-5 + 2 * a);
      obs.push_back(i % 10 == 0 ? NAN : -5 + 2 * a);
      t.push_back(i);
    }
  };
  {
    StoreWriter w(d / "s.h5", m);
    std::vector<float> x, obs;
    std::vector<int64_t> t;
    make(200, x, obs, t);
    w.write_split("train", x, obs, obs, t);
    x.clear(), obs.clear(), t.clear();
    make(50, x, obs, t);
    w.write_split("test", x, obs, obs, t);
    w.close();
  }
  StoreReader s(d / "s.h5");
  const auto lin = linear_baseline(s, "test", {2, 1e-6, 6});
  std::vector<float> obs(100);
  s.read_obs("test", 0, 50, obs.data());
  size_t negative = 0;
  for (size_t i = 0; i < obs.size(); ++i) {
    ASSERT_TRUE(std::isfinite(lin[i])) << i;  // the gappy box gets its own fit
    if (std::isfinite(obs[i])) {
      EXPECT_NEAR(lin[i], obs[i], 1e-3) << i;
    }
    negative += lin[i] < 0;
  }
  EXPECT_GT(negative, 40u);
  const auto clim = climatology_baseline(s, "test");
  EXPECT_LT(clim[0], -3.0f);
  EXPECT_TRUE(std::isfinite(clim[1]));
}
