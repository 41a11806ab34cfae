#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/config.h"
#include "io/error.h"
#include "config_test_util.h"
#include "support/test_support.h"

using ds::load_config;

namespace {
using ds::test::write;
using ds::test::usage_error;
}  // namespace

TEST(Config, ShippedConfigsLoad) {
  const auto demo = load_config(ds::test::source_dir() + "/configs/demo.yaml");
  EXPECT_EQ(demo.fetch.predictors.size(), 20u);
  EXPECT_EQ(demo.fetch.predictors[0].name(), "z@500");
  EXPECT_EQ(demo.preprocess.predictand_grid.nlat(), 4 * demo.preprocess.predictor_grid.nlat() - 3);
  EXPECT_EQ(demo.preprocess.predictand_grid.nlon(), 4 * demo.preprocess.predictor_grid.nlon() - 3);
  const auto na = load_config(ds::test::source_dir() + "/configs/north_america.yaml");
  EXPECT_EQ(na.model.name, "mnn");
  EXPECT_EQ(na.preprocess.predictor_grid.nlat(), 30);
  EXPECT_EQ(na.preprocess.predictor_grid.nlon(), 53);
  EXPECT_EQ(na.preprocess.predictand_grid.nlat(), 117);
  EXPECT_EQ(na.preprocess.predictand_grid.nlon(), 209);
  EXPECT_EQ(na.train.batch_size, 32);
  EXPECT_DOUBLE_EQ(na.train.learning_rate, 1e-4);
  EXPECT_EQ(na.train.epochs, 200);
  EXPECT_TRUE(na.preprocess.validation_years.empty());
}

TEST(Config, UnknownKeyNamesFileKeyAndSuggestion) {
  ds::test::TempDir d;
  const auto p = write(d, "run: {dir: x}\ntrain:\n  epoch: 5\n");
  const auto msg = usage_error([&] { load_config(p); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key 'train.epoch'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'train.epochs'"), std::string::npos) << msg;
}

TEST(Config, UnknownSectionIsAnError) {
  ds::test::TempDir d;
  const auto p = write(d, "run: {dir: x}\ntrian: {epochs: 3}\n");
  EXPECT_NE(usage_error([&] { load_config(p); }).find("unknown key 'trian'"), std::string::npos);
}

TEST(Config, OverridesApplyAndUnknownOverrideNamesSet) {
  ds::test::TempDir d;
  const auto p = write(d, "run: {dir: x}\ntrain: {epochs: 3}\n");
  const auto c = load_config(p, {"train.epochs=7", "fetch.years=[2001, 2003]", "run.dir=elsewhere"});
  EXPECT_EQ(c.train.epochs, 7);
  EXPECT_EQ(c.fetch.years.first, 2001);
  EXPECT_EQ(c.fetch.years.last, 2003);
  EXPECT_EQ(c.run.dir, "elsewhere");
  const auto msg = usage_error([&] { load_config(p, {"train.epocs=7"}); });
  EXPECT_NE(msg.find("--set train.epocs"), std::string::npos) << msg;
}

TEST(Config, WrongTypesAndValuesAreErrors) {
  ds::test::TempDir d;
  EXPECT_NE(usage_error([&] { load_config(write(d, "run: {dir: x}\ntrain: {epochs: many}\n")); }).find("train.epochs"),
            std::string::npos);
  for (const char* bad : {"z@", "@500", "z@0", "z@850hPa", "z 500", "9z"})
    EXPECT_NE(usage_error([&] {
                load_config(write(d, std::string("run: {dir: x}\nfetch: {predictors: {fields: ['") + bad + "']}}\n"));
              }).find("'" + std::string(bad) + "' is not 'var@level'"),
              std::string::npos)
        << bad;
  EXPECT_NE(usage_error([&] { load_config(write(d, "run: {dir: x}\nfetch: {years: [2005, 2001]}\n")); })
                .find("fetch.years"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { load_config(write(d, "run: {dir: x}\nmodel: {name: resnet}\n")); }).find("model.name"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { load_config(write(d, "train: {epochs: 1}\n")); }).find("'run.dir' is required"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { load_config(d / "missing.yaml"); }).find("cannot open"), std::string::npos);
  EXPECT_NE(usage_error([&] { load_config(write(d, "run: {dir: x, device: gpu}\n")); }).find("'run.device' is 'gpu'"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { load_config(write(d, "run: {dir: x}\ntrain: {allreduce_bucket_mb: -1}\n")); })
                .find("train.allreduce_bucket_mb"),
            std::string::npos);
}

TEST(Config, SurfaceFieldsAreABareVariableAndThePredictandMayBeAbsent) {
  ds::test::TempDir d;
  const auto c = load_config(write(d, "run: {dir: x}\nfetch:\n  predictors: {dataset: iberia_ncep, fields: [hus@850, psl, ta@850, tas]}\n"));
  ASSERT_EQ(c.fetch.predictors.size(), 4u);
  EXPECT_EQ(c.fetch.predictors[1].var, "psl");
  EXPECT_EQ(c.fetch.predictors[1].level, 0);
  EXPECT_EQ(c.fetch.predictors[1].name(), "psl");
  EXPECT_EQ(c.fetch.predictors[0].name(), "hus@850");
  EXPECT_EQ(c.fetch.predictors[3].name(), "tas");
  EXPECT_FALSE(c.fetch.has_predictand());  // predictors alone: a GCM run
  const auto with = load_config(write(d, "run: {dir: x}\nfetch: {predictand: {dataset: iberia_eobs, variable: tas}}\n"));
  EXPECT_TRUE(with.fetch.has_predictand());
  const auto source_only = load_config(write(d, "run: {dir: x}\nfetch: {predictand: {source: obs.nc}}\n"));
  EXPECT_TRUE(source_only.fetch.has_predictand());
  // A config that names a predictand fetches a GCM run's predictors alone with one override.
  const std::string both = write(d, "run: {dir: x}\nfetch: {predictand: {dataset: iberia_eobs, variable: tas}}\n");
  EXPECT_FALSE(load_config(both, {"fetch.predictand=null"}).fetch.has_predictand());
  EXPECT_FALSE(load_config(write(d, "run: {dir: x}\nfetch: {predictand: null}\n")).fetch.has_predictand());
}

// A box across the antimeridian goes past 180 (its columns east of it come with longitudes past
// 180 too); written the other way round, the error says how; wider than the globe is refused.
TEST(Config, ABoxAcrossTheAntimeridianGoesPast180) {
  ds::test::TempDir d;
  const auto c = load_config(write(d, "run: {dir: x}\nfetch: {lon: [170, 190], lat: [40, 45]}\n"));
  EXPECT_EQ(c.fetch.lon_min, 170);
  EXPECT_EQ(c.fetch.lon_max, 190);
  EXPECT_NE(usage_error([&] { load_config(write(d, "run: {dir: x}\nfetch: {lon: [170, -170]}\n")); })
                .find("must be [min, max], got [170, -170] (a box across the antimeridian goes past 180: [170, 190])"),
            std::string::npos);
  // A regional box written backwards gets no such hint (it was not meant to be 340 degrees wide).
  EXPECT_EQ(usage_error([&] { load_config(write(d, "run: {dir: x}\nfetch: {lon: [-10, -30]}\n")); }).find("antimeridian"),
            std::string::npos);
  // A grid in 0..360 beside a box in -180..180: preprocess compares longitudes as written.
  EXPECT_NE(usage_error([&] {
              load_config(write(d, "run: {dir: x}\nfetch: {lon: [-167, -58], lat: [10, 72]}\n"
                                   "preprocess: {predictor_grid: {lon: [195, 299], lat: [12, 70], step: 2}}\n"));
            }).find("'preprocess.predictor_grid.lon' is [195, 299], a turn away from fetch.lon [-167, -58]: write the "
                    "grid in the box's longitudes, [-165, -61]"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { load_config(write(d, "run: {dir: x}\nfetch: {lon: [-180, 200]}\n")); })
                .find("fetch.lon' spans 380 degrees, more than the globe's 360"),
            std::string::npos)
      << usage_error([&] { load_config(write(d, "run: {dir: x}\nfetch: {lon: [-180, 200]}\n")); });
}

// The record is the file's text whole, then the --set overrides; a config built in code names a
// file that need not exist (nothing to record), but one that exists and cannot be read is an
// error naming it, not a record without the config.
TEST(Config, RecordIsTheTextParsed) {
  ds::test::TempDir d;
  const auto p = write(d, "run: {dir: x}\ntrain: {epochs: 3}");
  const ds::Config c = load_config(p, {"train.epochs=7"});
  write(d, "run: {dir: y}\n");  // an edit after the stage read its config is not what it runs with
  EXPECT_EQ(c.record("train"),
            "run: {dir: x}\ntrain: {epochs: 3}\n# --set overrides given to downscale train (they win over the file "
            "above):\n#   --set train.epochs=7\n");
  ds::Config built;  // a config built in code records no text
  built.file = d / "none.yaml";
  EXPECT_EQ(built.record("train"), "");
  std::filesystem::create_directories(d / "folder.yaml");
  try {
    load_config(d / "folder.yaml");
    ADD_FAILURE() << "a folder read as a config";
  } catch (const ds::Error& e) {
    EXPECT_EQ(std::string(e.what()), (d / "folder.yaml") + ": cannot be read: Is a directory");
    EXPECT_EQ(e.code(), ds::kExitUsage);
  }
  try {
    load_config(d / "absent.yaml");
    ADD_FAILURE() << "an absent config read";
  } catch (const ds::UsageError& e) {
    EXPECT_EQ(std::string(e.what()), (d / "absent.yaml") + ": cannot open config file");
  }
}
