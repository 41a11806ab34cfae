// The CUDA backend's per-pass candidate list (model/cuda/conv_choices.h): the order in which it
// tries cuDNN algorithms when one is refused at run time, and which statuses allow a retry. The
// retry itself runs only on a GPU (ModelCuda.* through cuda_conv.cu).
#include <gtest/gtest.h>

#include <cmath>

#include "model/cuda/conv_choices.h"

namespace ds::model {
namespace {

ConvChoice choice(int algo, int math, size_t ws, bool timed) { return ConvChoice{algo, math, ws, timed}; }

TEST(ConvChoices, FoundFirstThenHeuristicWithoutRepeats) {
  const std::vector<ConvChoice> found = {choice(1, 1, 0, true), choice(6, 1, 1024, true), choice(1, 0, 0, true)};
  const std::vector<ConvChoice> heuristic = {choice(6, 1, 2048, false), choice(0, 1, 0, false), choice(1, 2, 0, false),
                                             choice(0, 1, 0, false)};
  const auto all = merge_choices(found, heuristic);
  ASSERT_EQ(all.size(), 5u);
  // Find's order and workspace figures stand for the pairs it timed.
  EXPECT_EQ(all[0].algo, 1);
  EXPECT_EQ(all[0].math, 1);
  EXPECT_EQ(all[1].algo, 6);
  EXPECT_EQ(all[1].workspace, 1024u);
  EXPECT_TRUE(all[1].timed);
  EXPECT_EQ(all[2].algo, 1);
  EXPECT_EQ(all[2].math, 0);
  // The heuristic adds only pairs Find did not list: algorithm 1 under another math type counts.
  EXPECT_EQ(all[3].algo, 0);
  EXPECT_FALSE(all[3].timed);
  EXPECT_EQ(all[4].algo, 1);
  EXPECT_EQ(all[4].math, 2);
}

// FP32 mode runs every entry under FMA math (adopt_choice): the heuristic's tensor-core entry of an
// algorithm Find timed under FMA is the same call, so it is not a second candidate, and the
// entries carry the math type they run with (the refusal line prints it).
TEST(ConvChoices, ForcedMathMergesEntriesThatRunTheSameCall) {
  const int kFma = 3;  // CUDNN_FMA_MATH; the heuristic's others: 0 default, 1 tensor op
  const std::vector<ConvChoice> found = {choice(1, kFma, 0, true), choice(0, kFma, 0, true)};
  const std::vector<ConvChoice> heuristic = {choice(1, 1, 0, false), choice(6, 1, 4096, false), choice(0, 0, 0, false)};
  const auto all = merge_choices(found, heuristic, kFma);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].algo, 1);
  EXPECT_EQ(all[1].algo, 0);
  EXPECT_EQ(all[2].algo, 6);
  EXPECT_FALSE(all[2].timed);
  for (const ConvChoice& c : all) EXPECT_EQ(c.math, kFma);
  EXPECT_EQ(merge_choices(found, heuristic).size(), 5u);  // without forcing: each pair its own entry
}

TEST(ConvChoices, WithoutFindTheHeuristicOrderStands) {
  const auto all = merge_choices({}, {choice(2, 0, 8, false), choice(0, 0, 0, false)});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].algo, 2);
  EXPECT_EQ(all[1].algo, 0);
  EXPECT_TRUE(merge_choices({}, {}).empty());
}

TEST(ConvChoices, OnlyArgumentRefusalsAllowAnotherAlgorithm) {
  // cuDNN 9's numbering (cudnn_graph.h); the CUDA backend static_asserts the same values.
  EXPECT_TRUE(refused_before_launch(2000));   // BAD_PARAM
  EXPECT_TRUE(refused_before_launch(2008));   // BAD_PARAM_SHAPE_MISMATCH
  EXPECT_TRUE(refused_before_launch(3000));   // NOT_SUPPORTED
  EXPECT_TRUE(refused_before_launch(3003));   // NOT_SUPPORTED_DATA_TYPE
  EXPECT_TRUE(refused_before_launch(3010));   // NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT
  EXPECT_FALSE(refused_before_launch(0));     // SUCCESS
  EXPECT_FALSE(refused_before_launch(1001));  // NOT_INITIALIZED
  EXPECT_FALSE(refused_before_launch(3005));  // NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER: no algorithm runs
  EXPECT_FALSE(refused_before_launch(3006));  // NOT_SUPPORTED_INCOMPATIBLE_CUDART
  EXPECT_FALSE(refused_before_launch(4000));  // INTERNAL_ERROR
  EXPECT_FALSE(refused_before_launch(4004));  // device allocation failed
  EXPECT_FALSE(refused_before_launch(5000));  // EXECUTION_FAILED: work may have run
}

// DOWNSCALE_CUDA_GRAPH=timed and DOWNSCALE_CUDA_TF32_PASSES=timed: an engine replaces the legacy
// algorithm, a TF32 pass the 16-bit one, only when it takes under 97 % of its time, both timed
// (the best of many engines' timings is biased low; a near tie keeps the pass's kernel, and its
// last bits, the same from run to run).
TEST(ConvChoices, AlternativeKeptOnlyWellAheadOfTheWayItReplaces) {
  EXPECT_TRUE(clearly_faster(0.443f, 1.126f));  // the 75 -> 100 backward data: PyTorch's and ours (H200)
  EXPECT_TRUE(clearly_faster(0.96f, 1.0f));
  EXPECT_FALSE(clearly_faster(0.98f, 1.0f));  // faster, but within the margin
  EXPECT_FALSE(clearly_faster(1.0f, 1.0f));
  EXPECT_FALSE(clearly_faster(1.2f, 1.0f));
  EXPECT_FALSE(clearly_faster(0.5f, -1.0f));  // the legacy algorithm not timed (its workspace)
  EXPECT_FALSE(clearly_faster(-1.0f, 1.0f));  // no engine timed
  EXPECT_FALSE(clearly_faster(std::nanf(""), 1.0f));
  EXPECT_TRUE(clearly_faster(0.602f, 1.126f));  // that pass as TF32 against BF16 (H200)
}

// DOWNSCALE_CUDA_PAD_CHANNELS=timed: the padded descriptors win only on the three passes' sum with
// the copies padding adds, by more than the 3 % margin, and only with every time known (timing
// failing on either side leaves the layer as written).
TEST(ConvChoices, PaddingPaysOnlyWhenItsPassesAndCopiesAreFaster) {
  const float plain[3] = {1.867f, 2.630f, 1.787f};  // up2_conv1's BF16 passes on an H200 (ms): 6.284
  const float padded[3] = {1.6f, 2.2f, 1.7f};         // 5.5; 97 % of 6.284 is 6.095
  EXPECT_TRUE(padding_pays(plain, padded, 0));
  EXPECT_TRUE(padding_pays(plain, padded, 0.5f));   // 6.0
  EXPECT_FALSE(padding_pays(plain, padded, 0.7f));  // 6.2: faster, but within the margin
  EXPECT_FALSE(padding_pays(plain, padded, 0.8f));  // 6.3: the copies eat the gain
  // One pass slower, the sum still faster: the sum decides (each pass runs once a step).
  const float mixed[3] = {1.9f, 2.0f, 1.8f};
  EXPECT_TRUE(padding_pays(plain, mixed, 0));
  const float two_percent[3] = {1.8f, 2.6f, 1.76f};  // 6.16: 2 % faster, within the margin
  EXPECT_FALSE(padding_pays(plain, two_percent, 0));
  EXPECT_FALSE(padding_pays(plain, plain, 0));  // a tie keeps the operands as written
  float untimed[3] = {1.0f, -1.0f, 1.0f};
  EXPECT_FALSE(padding_pays(plain, untimed, 0));
  EXPECT_FALSE(padding_pays(untimed, padded, 0));
  untimed[1] = std::nanf("");
  EXPECT_FALSE(padding_pays(plain, untimed, 0));
  EXPECT_FALSE(padding_pays(plain, padded, -1));  // the copy's time unknown
}

}  // namespace
}  // namespace ds::model
