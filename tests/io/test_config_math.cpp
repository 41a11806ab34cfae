// run.math: TF32 by default, FP32 on request, anything else a usage error naming the key (own
// file, beside test_config.cpp, so each part's keys test apart).
#include <gtest/gtest.h>

#include <fstream>

#include "io/config.h"
#include "io/error.h"
#include "config_test_util.h"
#include "support/test_support.h"

using ds::load_config;

namespace {
using ds::test::write;
}  // namespace

TEST(Config, RunMathDefaultsToTf32) {
  ds::test::TempDir d;
  EXPECT_EQ(load_config(write(d, "run: {dir: x}\n")).run.math, "tf32");
  EXPECT_EQ(load_config(write(d, "run: {dir: x, math: fp32}\n")).run.math, "fp32");
  EXPECT_EQ(load_config(write(d, "run: {dir: x}\n"), {"run.math=fp32"}).run.math, "fp32");
  try {
    load_config(write(d, "run: {dir: x, math: fp16}\n"));
    ADD_FAILURE() << "run.math fp16 accepted";
  } catch (const ds::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'run.math' is 'fp16', expected tf32 or fp32"), std::string::npos) << e.what();
  }
}
