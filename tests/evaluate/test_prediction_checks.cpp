// evaluate's checks of the prediction it scores (evaluate/prediction_checks.h): a value predict
// never writes, over a modelled box, is refused with its variable, date and box.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "evaluate/prediction_checks.h"
#include "io/error.h"

using namespace ds;

namespace {

// Two days (1970-01-01, 1970-01-02) on a 2 x 2 window whose box (lat 1, lon 1) is ocean.
struct TwoDays {
  std::vector<int64_t> days{0, 1};
  std::vector<double> lat{40, 41}, lon{-5, -4};
  std::vector<uint8_t> mask{1, 1, 1, 0};
  ScoredGrid grid() const { return {&days, "standard", &lat, &lon, &mask}; }
};

std::string refusal(const std::vector<float>& values, double lo, double hi) {
  const TwoDays g;
  try {
    check_scored_values("pred.nc", "pr", values, g.grid(), lo, hi, "[0, 10] mm/day");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(PredictionChecks, ValuesOverModelledBoxesMustBeFiniteAndInRange) {
  const float nan = NAN;
  // The ocean box (index 3 of each day) may hold anything.
  EXPECT_EQ(refusal({0, 1, 10, nan, 2, 3, 4, 1e30f}, 0, 10), "");
  std::string msg = refusal({0, 1, 2, 0, 2, nan, 4, 0}, 0, 10);
  EXPECT_NE(msg.find("pred.nc: pr is nan on 1970-01-02 at lat 40, lon -4 (a modelled box): not a value predict "
                     "writes"),
            std::string::npos)
      << msg;
  msg = refusal({0, 1, 2, 0, 2, 3, 4e30f, 0}, 0, 10);
  EXPECT_NE(msg.find("pr is 4e+30 on 1970-01-02 at lat 41, lon -5 (a modelled box), outside [0, 10] mm/day"),
            std::string::npos)
      << msg;
  EXPECT_NE(refusal({-0.5f, 0, 0, 0, 0, 0, 0, 0}, 0, 10).find("pr is -0.5 on 1970-01-01 at lat 40, lon -5"),
            std::string::npos);
  // A third plane (the second member) starts again at the first day, and is named.
  msg = refusal({0, 0, 0, 0, 0, 0, 0, 0, 0, 11, 0, 0}, 0, 10);
  EXPECT_NE(msg.find("pr (member 1) is 11 on 1970-01-01 at lat 40, lon -4"), std::string::npos) << msg;
}

TEST(PredictionChecks, PossibleValuesFollowTheObservations) {
  const float nan = NAN;
  const std::vector<uint8_t> mask{1, 0};
  // Three days of two boxes: the second box's 500 and 7 are not observations of a modelled box.
  const ObservedRange r = observed_range({3, 500, 0, nan, 12, 7}, mask);
  EXPECT_EQ(r.lo, 0);
  EXPECT_EQ(r.hi, 12);
  std::string range;
  auto [lo, hi] = possible_values(r, true, "mm/day", range);
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, kLargestPossible);
  EXPECT_NE(range.find("[0, 2000] mm/day"), std::string::npos) << range;  // at least kLargestPossible
  EXPECT_EQ(possible_values({0, 350}, true, "mm/day", range).second, kImpossibleOverObserved * 350);
  // Any other predictand: the observed range widened by its width on each side.
  std::tie(lo, hi) = possible_values({-30, 40}, false, "degC", range);
  EXPECT_EQ(lo, -100);
  EXPECT_EQ(hi, 110);
  // Observations dry throughout still leave room for a wet draw; nothing observed bounds nothing.
  EXPECT_EQ(possible_values({0, 0}, true, "mm/day", range).second, kLargestPossible);
  EXPECT_TRUE(std::isinf(possible_values(observed_range({nan}, {1}), true, "mm/day", range).second));
}
