// The preprocess settings a store was built with travel in it (split_years, wet_threshold,
// channels, grids, standardize, fill, min_valid_fraction, regrid); a config edited since is said
// by the stages that use the store as it is (train/store_settings.h). A config that gives no
// preprocess key is compared only on what it gives.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "io/config.h"
#include "io/training_store.h"
#include "support/test_support.h"
#include "train/store_settings.h"

using namespace ds;

namespace {

StoreMeta recorded_meta(const std::string& split_years) {
  StoreMeta m;
  m.channels = {"z@500", "ta@850"};
  m.predictor_lon = {-10, -8};
  m.predictor_lat = {36, 38};  // ascending, as preprocess writes every grid (the reader refuses others)
  m.predictand_lon = {-10, -9, -8, -7, -6};
  m.predictand_lat = {36, 37, 38, 39, 40};
  m.set_window_to_output_grid();
  m.mask.assign(25, 1);
  m.mean.assign(8, 0.0f);
  m.sd.assign(8, 1.0f);
  m.split_years = split_years;
  m.wet_threshold = 0.99;
  m.standardize = "grid_box";
  m.fill = "none";
  m.regrid = "z@500:bilinear,ta@850:conservative,pr:nearest";
  m.min_valid_fraction = 0.9;
  return m;
}

std::string write_store(const std::string& path, const StoreMeta& m) {
  const size_t n = 2;
  std::vector<float> x(n * 8, 0.5f), y(n * 25, 1.0f);
  std::vector<int64_t> t{0, 1};
  StoreWriter w(path, m);
  w.write_split("train", x, y, y, t);
  w.close();
  return path;
}

// The config a user wrote for the store (every setting it records), plus `extra` lines.
Config config_with(const test::TempDir& d, const std::string& extra, const std::vector<std::string>& overrides = {}) {
  const std::string p = d / "c.yaml";
  std::ofstream(p) << "run:\n  dir: out\nfetch:\n  predictors:\n    fields: [z@500, ta@850]\n"
                      "preprocess:\n  train_years: [1979, 2002]\n  test_years: [2003, 2008]\n"
                      "  wet_threshold: 0.99\n  standardize: grid_box\n  fill: none\n"
                      "  predictor_grid: {lon: [-10, -8], lat: [36, 38], step: 2}\n"
                      "  predictand_grid: {lon: [-10, -6], lat: [36, 40], step: 1}\n"
                      "  regrid: {default: bilinear, ta: conservative, pr: nearest}\n"
                   << extra;
  return load_config(p, overrides);
}

}  // namespace

TEST(StoreSettings, SplitYearsRecordedAndComparedWithTheConfig) {
  test::TempDir d;
  Config cfg;
  cfg.preprocess.train_years = {1979, 2002};
  cfg.preprocess.test_years = {2003, 2008};
  EXPECT_EQ(cfg.preprocess.split_years_text(), "train 1979..2002, validation none, test 2003..2008");
  const StoreReader recorded(write_store(d / "recorded.h5", recorded_meta(cfg.preprocess.split_years_text())));
  EXPECT_EQ(recorded.meta().split_years, "train 1979..2002, validation none, test 2003..2008");
  EXPECT_EQ(store_settings_change(cfg, recorded), "");

  Config edited = cfg;
  edited.preprocess.test_years = {2004, 2008};
  const std::string said = store_settings_change(edited, recorded);
  EXPECT_NE(said.find("recorded.h5 was built with the split years train 1979..2002, validation none, test "
                      "2003..2008 (the config now gives train 1979..2002, validation none, test 2004..2008, from "),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("run `downscale preprocess` again and the stages after it"), std::string::npos) << said;

  // A store from before the years were recorded, or a config that gives none (for the later
  // stages alone): nothing to compare.
  const StoreReader older(write_store(d / "older.h5", recorded_meta("")));
  EXPECT_EQ(older.meta().split_years, "");
  EXPECT_EQ(store_settings_change(edited, older), "");
  EXPECT_EQ(Config().preprocess.split_years_text(), "");
  EXPECT_EQ(store_settings_change(Config(), recorded), "");
}

TEST(StoreSettings, TheConfigTheStoreWasBuiltWithSaysNothing) {
  test::TempDir d;
  const Config cfg = config_with(d, "");
  const StoreReader store(write_store(d / "s.h5", recorded_meta(cfg.preprocess.split_years_text())));
  EXPECT_TRUE(store_setting_changes(cfg, store).empty()) << store_settings_change(cfg, store);
}

TEST(StoreSettings, EachEditedSettingIsNamedWithTheStoresValueAndWhereTheNewOneCameFrom) {
  test::TempDir d;
  const Config built = config_with(d, "");
  const StoreReader store(write_store(d / "s.h5", recorded_meta(built.preprocess.split_years_text())));
  const auto said = [&](const std::vector<std::string>& sets) {
    const std::vector<StoreSettingChange> c = store_setting_changes(config_with(d, "", sets), store);
    return c.size() == 1 ? c[0].text : "(" + std::to_string(c.size()) + " changes)";
  };
  EXPECT_EQ(said({"preprocess.wet_threshold=3"}),
            "preprocess.wet_threshold 0.99 mm/day (the config now gives 3, from --set preprocess.wet_threshold=3)");
  EXPECT_EQ(said({"preprocess.standardize=field"}),
            "preprocess.standardize grid_box (the config now gives field, from --set preprocess.standardize=field)");
  EXPECT_EQ(said({"preprocess.fill=climatology"}),
            "preprocess.fill none (the config now gives climatology, from --set preprocess.fill=climatology)");
  // The predictors as a set: preprocess keeps the manifest's order whatever the config lists.
  EXPECT_EQ(said({"fetch.predictors.fields=[ta@850,z@500]"}), "(0 changes)");
  EXPECT_EQ(said({"fetch.predictors.fields=[z@500,ta@700]"}),
            "the predictors z@500,ta@850 (the config's fetch.predictors.fields now gives z@500,ta@700, from --set "
            "fetch.predictors.fields=[z@500,ta@700])");
  EXPECT_EQ(said({"preprocess.min_valid_fraction=0.5"}),
            "preprocess.min_valid_fraction 0.9 (the config now gives 0.5, from --set preprocess.min_valid_fraction=0.5)");
  EXPECT_EQ(said({"preprocess.train_years=[1980,2002]"}),
            "the split years train 1979..2002, validation none, test 2003..2008 (the config now gives train "
            "1980..2002, validation none, test 2003..2008, from --set preprocess.train_years=[1980,2002])");
  EXPECT_EQ(said({"preprocess.predictor_grid.step=1"}),
            "preprocess.predictor_grid: lon -10..-8 (2 values), lat 36..38 (2 values) (the config now gives lon -10..-8 "
            "(3 values), lat 36..38 (3 values), from --set preprocess.predictor_grid.step=1)");
  EXPECT_EQ(said({"preprocess.predictand_grid.lon=[-9,-6]"}),
            "preprocess.predictand_grid: lon -10..-6 (5 values), lat 36..40 (5 values) (the config now gives lon -9..-6 "
            "(4 values), lat 36..40 (5 values), from --set preprocess.predictand_grid.lon=[-9,-6])");
  // The method of each field by the config's rule (field, variable, default), against the store's.
  EXPECT_EQ(said({"preprocess.regrid.ta=bilinear", "preprocess.regrid.z@500=nearest"}),
            "preprocess.regrid: z@500 bilinear (now nearest, from --set preprocess.regrid.z@500=nearest); ta@850 "
            "conservative (now bilinear, from --set preprocess.regrid.ta=bilinear)");
  EXPECT_EQ(said({"preprocess.wet_threshold=3", "preprocess.fill=climatology"}), "(2 changes)");

  // The whole sentence: the store, every change, what to run.
  const std::string whole = store_settings_change(config_with(d, "", {"preprocess.wet_threshold=1"}), store);
  EXPECT_EQ(whole, store.path() + " was built with preprocess.wet_threshold 0.99 mm/day (the config now gives 1, from "
                                  "--set preprocess.wet_threshold=1): this stage uses the store's; for the config's, "
                                  "run `downscale preprocess` again and the stages after it");
  // Other predictors are fetched before preprocess takes them.
  const std::string fields = store_settings_change(config_with(d, "", {"fetch.predictors.fields=[z@500]"}), store);
  EXPECT_NE(fields.find("run `downscale fetch` (for the other predictors), then `downscale preprocess`, again and the "
                        "stages after it"),
            std::string::npos)
      << fields;
}

TEST(StoreSettings, AConfigThatDescribesTheStoreIsComparedOnItsDefaultsToo) {
  // A line deleted from the preprocess section: the default now applies, and the store was not
  // built with it.
  test::TempDir d;
  StoreMeta m = recorded_meta("train 1979..2002, validation none, test 2003..2008");
  m.wet_threshold = 3.0;
  const StoreReader store(write_store(d / "s.h5", m));
  const std::string p = d / "c.yaml";
  std::ofstream(p) << "run:\n  dir: out\npreprocess:\n  train_years: [1979, 2002]\n  test_years: [2003, 2008]\n"
                      "  regrid: {ta: conservative, pr: nearest}\n"
                      "  predictand_grid: {lon: [-10, -6], lat: [36, 40], step: 1}\n";
  const std::vector<StoreSettingChange> c = store_setting_changes(load_config(p, {}), store);
  ASSERT_EQ(c.size(), 1u) << store_settings_change(load_config(p, {}), store);
  EXPECT_EQ(c[0].text, "preprocess.wet_threshold 3 mm/day (the config now gives 0.99, the default: " + p +
                           " does not set it)");
  // Without its predictand_grid the observations would not be regridded: said once, as a grid.
  std::ofstream(p) << "run:\n  dir: out\npreprocess:\n  wet_threshold: 3\n  regrid: {ta: conservative, pr: nearest}\n";
  const std::vector<StoreSettingChange> g = store_setting_changes(load_config(p, {}), store);
  ASSERT_EQ(g.size(), 1u) << store_settings_change(load_config(p, {}), store);
  EXPECT_EQ(g[0].text, "preprocess.predictand_grid: lon -10..-6 (5 values), lat 36..40 (5 values) (the config now "
                       "gives none, the observations' grid as fetched: " + p + " does not set it)");
}

TEST(StoreSettings, KeysTheConfigDoesNotGiveAreNotCompared) {
  // A config for the later stages alone: its defaults (wet_threshold 0.99, grid_box, none) say
  // nothing about a store built with others.
  test::TempDir d;
  StoreMeta m = recorded_meta("train 1979..2002, validation none, test 2003..2008");
  m.wet_threshold = 3.0;
  m.standardize = "field";
  m.fill = "climatology";
  const StoreReader store(write_store(d / "s.h5", m));
  const std::string p = d / "later.yaml";
  std::ofstream(p) << "run:\n  dir: out\ntrain:\n  epochs: 2\n";
  const Config later = load_config(p, {});
  EXPECT_FALSE(later.gives("preprocess.wet_threshold"));
  EXPECT_TRUE(later.gives("train.epochs"));
  EXPECT_TRUE(later.gives("train"));
  EXPECT_FALSE(later.gives("train.epoch"));
  EXPECT_TRUE(store_setting_changes(later, store).empty()) << store_settings_change(later, store);
  // The same store against the config that gives them: all three named.
  EXPECT_EQ(store_setting_changes(config_with(d, ""), store).size(), 3u) << store_settings_change(config_with(d, ""), store);
}
