// train.precision (tf32 by default, fp32, bf16, fp16; the old run.math is an error saying where it
// went) and train.loss_scale (dynamic or a positive number). Own file, beside test_config.cpp, so
// each part's keys test apart.
#include <gtest/gtest.h>

#include <fstream>

#include "io/config.h"
#include "io/error.h"
#include "config_test_util.h"
#include "support/test_support.h"

using ds::load_config;

namespace {
using ds::test::write;

// The UsageError message of loading `yaml`, or "" when it loads.
std::string usage_error(const ds::test::TempDir& d, const std::string& yaml) {
  try {
    load_config(write(d, yaml));
  } catch (const ds::UsageError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Config, TrainPrecisionDefaultsToTf32) {
  ds::test::TempDir d;
  EXPECT_EQ(load_config(write(d, "run: {dir: x}\n")).train.precision, "tf32");
  for (const char* p : {"fp32", "bf16", "fp16", "tf32"})
    EXPECT_EQ(load_config(write(d, std::string("run: {dir: x}\ntrain: {precision: ") + p + "}\n")).train.precision, p);
  EXPECT_EQ(load_config(write(d, "run: {dir: x}\n"), {"train.precision=bf16"}).train.precision, "bf16");
  const std::string e = usage_error(d, "run: {dir: x}\ntrain: {precision: fp8}\n");
  EXPECT_NE(e.find("'train.precision' is 'fp8'"), std::string::npos) << e;
}

TEST(Config, RunMathWasRenamedTrainPrecision) {
  ds::test::TempDir d;
  const std::string e = usage_error(d, "run: {dir: x, math: fp32}\n");
  EXPECT_NE(e.find("key 'run.math' was renamed train.precision"), std::string::npos) << e;
}

TEST(Config, LossScaleIsDynamicOrAPositiveNumber) {
  ds::test::TempDir d;
  EXPECT_EQ(load_config(write(d, "run: {dir: x}\n")).train.loss_scale, "");
  EXPECT_EQ(load_config(write(d, "run: {dir: x}\ntrain: {loss_scale: dynamic}\n")).train.loss_scale, "dynamic");
  EXPECT_EQ(load_config(write(d, "run: {dir: x}\ntrain: {loss_scale: 1024}\n")).train.loss_scale, "1024");
  for (const char* bad : {"0", "-8", "lots", "inf"}) {
    const std::string e = usage_error(d, std::string("run: {dir: x}\ntrain: {loss_scale: ") + bad + "}\n");
    EXPECT_NE(e.find("'train.loss_scale' is '" + std::string(bad) + "', expected dynamic or a positive number"),
              std::string::npos)
        << e;
  }
}

// A grid's last value off the lattice first + i * step is refused, naming the two values on it
// (user test: lon [-10, 5] with step 2 silently became -10..6, and the messages named 6).
TEST(Config, GridEndsMustBeAWholeNumberOfStepsFromTheStart) {
  ds::test::TempDir d;
  const std::string e =
      usage_error(d, "run: {dir: x}\npreprocess: {predictor_grid: {lon: [-10, 5], lat: [35, 45], step: 2.0}}\n");
  EXPECT_NE(e.find("key 'preprocess.predictor_grid.lon' is [-10, 5], 7.5 steps of 2: the last value must be a whole "
                   "number of steps from the first (4 or 6)"),
            std::string::npos)
      << e;
  EXPECT_EQ(usage_error(d, "run: {dir: x}\npreprocess: {predictand_grid: {lon: [-164.75, -60.75], lat: [11.75, 69.75], "
                           "step: 0.5}}\n"),
            "");
}
