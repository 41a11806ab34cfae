// A checkpoint's recorded setup (train/training_setup.h), as train --resume and train --check
// --resume read it: the last session's part, its learning rate, and the line a change of rate gets.
#include <gtest/gtest.h>

#include "train/training_setup.h"

using namespace ds;

namespace {
const std::string kFirst = "1 rank(s), backend cpu (oneDNN, 2 threads), train.precision fp32, train.seed 7, learning rate 0.0001";
const std::string kSecond = "4 rank(s), backend cpu (oneDNN, 1 threads), train.precision fp32, train.seed 7, learning rate 0.0004";
}  // namespace

TEST(TrainingSetup, LatestIsTheLastSessionsPart) {
  EXPECT_EQ(latest_setup(""), "");
  EXPECT_EQ(latest_setup(kFirst), kFirst);
  EXPECT_EQ(latest_setup(kFirst + "; from epoch 3: " + kSecond), kSecond);
  EXPECT_EQ(latest_setup(kFirst + "; from epoch 3: " + kSecond + "; from epoch 9: " + kFirst), kFirst);
}

TEST(TrainingSetup, RateAndArithmeticAreTheirParts) {
  EXPECT_EQ(setup_learning_rate(kSecond), "0.0004");
  EXPECT_EQ(setup_learning_rate("1 rank(s), backend cpu, train.precision fp32"), "");  // an older version's
  EXPECT_EQ(without_learning_rate(kSecond), kSecond.substr(0, kSecond.find(", learning rate")));
  EXPECT_EQ(setup_arithmetic(kSecond), "4 rank(s), backend cpu (oneDNN, 1 threads), train.precision fp32");
  // Before the seed was recorded: everything but the rate.
  EXPECT_EQ(setup_arithmetic("2 rank(s), backend cpu, train.precision bf16, learning rate 0.0002"),
            "2 rank(s), backend cpu, train.precision bf16");
}

TEST(TrainingSetup, RateTextIsHorovodsRuleAfterWarmup) {
  EXPECT_EQ(learning_rate_text(1e-4, 1), "0.0001");
  EXPECT_EQ(learning_rate_text(1e-4, 4), "0.0004");
  EXPECT_EQ(learning_rate_text(2.5e-4, 3), "0.00075");
}

TEST(TrainingSetup, AChangedRateIsSaidWithTheEpochItTakesEffect) {
  const std::string recorded = kFirst + "; from epoch 3: " + kSecond;
  EXPECT_EQ(learning_rate_change("ck.h5", recorded, "0.0004", 1e-4, 4, 6), "");  // as the last session trained
  const std::string line = learning_rate_change("ck.h5", recorded, "0.0002", 1e-4, 2, 6);
  EXPECT_NE(line.find("ck.h5 trained at a learning rate of 0.0004"), std::string::npos) << line;
  EXPECT_NE(line.find("goes on at 0.0002 (train.learning_rate 0.0001 x 2 rank(s))"), std::string::npos) << line;
  EXPECT_NE(line.find("from epoch 6"), std::string::npos) << line;
  // An older version's checkpoint recorded no rate: nothing to compare.
  EXPECT_EQ(learning_rate_change("ck.h5", "1 rank(s), backend cpu, train.precision fp32", "0.0002", 1e-4, 2, 6), "");
}

TEST(TrainingSetup, AChangedSeedIsSaid) {
  const std::string recorded = kFirst + "; from epoch 3: " + kSecond;
  EXPECT_EQ(seed_change("ck.h5", recorded, 7, 6), "");
  const std::string line = seed_change("ck.h5", recorded, 8, 6);
  EXPECT_NE(line.find("ck.h5 was trained with train.seed 7; this run goes on with 8: from epoch 6 on"),
            std::string::npos) << line;
  EXPECT_EQ(seed_change("ck.h5", "1 rank(s), backend cpu, train.precision fp32", 8, 6), "");  // not recorded
}
