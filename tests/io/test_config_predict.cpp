// The config keys of predict and of several models per store: train.name, predict.standardize,
// predict.reference_years (own file, beside test_config.cpp, so each part's keys test apart).
#include <gtest/gtest.h>

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

TEST(Config, TrainNameAndPredictStandardization) {
  ds::test::TempDir d;
  const auto c = load_config(write(d, "run: {dir: x}\ntrain: {name: unet-2.b_1}\n"
                                      "predict: {standardize: own, reference_years: [1986, 2005]}\n"));
  EXPECT_EQ(c.train.name, "unet-2.b_1");
  EXPECT_EQ(c.predict.standardize, "own");
  EXPECT_EQ(c.predict.reference_years.first, 1986);
  EXPECT_EQ(c.predict.reference_years.last, 2005);
  const auto defaults = load_config(write(d, "run: {dir: x}\n"));
  EXPECT_EQ(defaults.train.name, "");
  EXPECT_EQ(defaults.predict.standardize, "training");
  // The name becomes a folder: nothing that leaves train/ or needs quoting.
  for (const char* bad : {"../up", "a/b", "has space", "..", "."})
    EXPECT_NE(usage_error([&] { load_config(write(d, "run: {dir: x}\n"), {std::string("train.name=") + bad}); })
                  .find("train.name"),
              std::string::npos)
        << bad;
  EXPECT_NE(usage_error([&] { load_config(write(d, "run: {dir: x}\npredict: {standardize: gcm}\n")); })
                .find("'predict.standardize' is 'gcm'"),
            std::string::npos);
  EXPECT_NE(usage_error([&] { load_config(write(d, "run: {dir: x}\npredict: {standardize: own}\n")); })
                .find("predict.reference_years"),
            std::string::npos);
}
