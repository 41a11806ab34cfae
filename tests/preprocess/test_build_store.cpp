#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "io/calendar.h"
#include "io/error.h"
#include "io/fetch_manifest.h"
#include "io/subset.h"
#include "io/training_store.h"
#include "preprocess/build_store.h"
#include "support/test_support.h"

using namespace ds;

namespace {

// A tiny run: two predictors on a 2° grid (3 x 4 points), precipitation on 0.5° (9 x 13),
// three years (train 2000, validation 2001, test 2002).
struct TinyRun {
  test::TempDir dir;
  Config cfg;
  TinyRun(bool with_nan = false) {
    test::SourceSpec z;
    for (double la = 34; la >= 30; la -= 2) z.lat.push_back(la);
    for (double lo = -110; lo <= -104; lo += 2) z.lon.push_back(lo);
    z.levels = {500};
    z.ndays = 366 + 365 + 365;
    z.value = [with_nan](int t, int, int j, int i) {
      if (with_nan && t == 400 && i == 1) return double(NAN);
      return 5000.0 + 10.0 * std::sin(t * 0.1 + i) + j;
    };
    test::write_source(dir / "z.nc", z);
    test::SourceSpec ta = z;  // the same numbers as a temperature, so the units check passes
    ta.variable = "ta";
    ta.units = "K";
    test::write_source(dir / "ta.nc", ta);
    test::SourceSpec pr;
    pr.variable = "pr";
    pr.units = "kg m-2 s-1";
    for (double la = 33.75; la >= 29.75; la -= 0.5) pr.lat.push_back(la);
    for (double lo = -109.75; lo <= -103.75; lo += 0.5) pr.lon.push_back(lo);
    pr.ndays = z.ndays;
    pr.value = [](int t, int, int j, int i) { return i < 2 ? double(NAN) : ((t + i + j) % 3) * 2.0 / 86400; };
    test::write_source(dir / "pr.nc", pr);

    cfg.file = dir / "cfg.yaml";
    cfg.run.dir = dir / "run";
    cfg.preprocess.predictor_grid = {-110, -104, 30, 34, 2};
    cfg.preprocess.predictand_grid = {-109.75, -103.75, 29.75, 33.75, 0.5};
    cfg.preprocess.train_years = {2000, 2000};
    cfg.preprocess.validation_years = {2001, 2001};
    cfg.preprocess.test_years = {2002, 2002};
    FetchManifest m;
    for (const std::string var : {"z", "ta"}) {
      const std::string name = var + "@500";
      SubsetRequest r{dir / (var + ".nc"), var, 500, -110, -103.5, 29.5, 34, {2000, 2002}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}};
      fetch_subset(r, dir / ("run/fetch/" + name + ".nc"), "test");
      m.predictors.push_back({name, var, name + ".nc", var + ".nc"});
    }
    SubsetRequest r{dir / "pr.nc", "pr", 0, -110, -103.5, 29.5, 34, {2000, 2002}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}};
    fetch_subset(r, dir / "run/fetch/pr.nc", "test");
    m.predictand = {"pr", "pr", "pr.nc", "pr.nc"};
    m.write(dir / "run/fetch/manifest.json");
    std::ofstream(cfg.file) << "run: {dir: x}\n";
  }
};

}  // namespace

TEST(BuildStore, WritesSplitsShapesStatisticsAndMask) {
  TinyRun run;
  const auto s = build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
  EXPECT_EQ(s.train, 366u);
  EXPECT_EQ(s.validation, 365u);
  EXPECT_EQ(s.test, 365u);
  StoreReader store(run.dir / "run/store.h5");
  const auto& m = store.meta();
  EXPECT_EQ(m.channels, (std::vector<std::string>{"z@500", "ta@500"}));
  EXPECT_EQ(m.H(), 3);
  EXPECT_EQ(m.W(), 4);
  EXPECT_EQ(m.Hy(), 9);
  EXPECT_EQ(m.Wy(), 13);
  EXPECT_EQ(m.mask[0], 0);   // lon index 0, 1 are ocean
  EXPECT_EQ(m.mask[2], 1);
  EXPECT_NEAR(s.land_share, 11.0 / 13.0, 1e-12);
  // Standardized training predictors: mean 0 and sample sd 1 in every box and channel.
  std::vector<float> x(366 * 2 * 12);
  store.read_x("train", 0, 366, x.data());
  for (int c = 0; c < 2; ++c)
    for (int k = 0; k < 12; ++k) {
      double sum = 0, sum2 = 0;
      for (int t = 0; t < 366; ++t) sum += x[(t * 2 + c) * 12 + k];
      const double mean = sum / 366;
      for (int t = 0; t < 366; ++t) sum2 += std::pow(x[(t * 2 + c) * 12 + k] - mean, 2);
      EXPECT_NEAR(mean, 0.0, 1e-4);
      EXPECT_NEAR(std::sqrt(sum2 / 365), 1.0, 1e-4);
    }
  // Target: precipitation in mm/day (0, 2 or 4) minus 0.99 where wet.
  std::vector<float> y(9 * 13), pr(9 * 13);
  store.read_y("test", 0, 1, y.data());
  store.read_pr("test", 0, 1, pr.data());
  for (int k = 0; k < 9 * 13; ++k) {
    if (!m.mask[k]) {
      EXPECT_TRUE(std::isnan(pr[k]));
      EXPECT_EQ(y[k], 0.0f);
      continue;
    }
    EXPECT_NEAR(y[k], pr[k] >= 0.99f ? pr[k] - 0.99f : 0.0f, 1e-5);
  }
  EXPECT_EQ(to_string(civil_from_days(store.read_time("test").front())), "2002-01-01");
}

TEST(BuildStore, ShapeMismatchPrintsBothShapes) {
  TinyRun run;
  run.cfg.preprocess.predictand_grid = {-109.75, -104.25, 29.75, 33.75, 0.5};  // 12 lon instead of 13
  try {
    build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("is 9 x 12"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("to 9 x 13"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(run.dir / "run/store.h5"));
}

TEST(BuildStore, MissingPredictorValueNamesVariableAndDateAndLeavesNoStore) {
  TinyRun run(true);
  try {
    build_store(run.cfg, run.dir / "run/fetch", run.dir / "run/store.h5");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("z@500.nc: variable 'z': missing value on 2001-02-04"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(run.dir / "run/store.h5"));
}
