// Checks of the prediction evaluate scores, made before any score: predict refuses to write a
// non-finite value over a modelled box, negative precipitation or a level the model could not
// have meant, so such a value in the file it scores was put there afterwards (an edit, a file
// of another tool under predict's name). Scored, an all-NaN prediction gave NaN scores and a
// field times 1e30 a table of 1e30s, both with exit 0.
#pragma once
#include <cstddef>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ds {

// Where the values lie: the prediction's days (CF day numbers in `calendar`) and its grid, which
// evaluate has checked to be the store's observation window; `mask` is 1 on modelled boxes.
struct ScoredGrid {
  const std::vector<int64_t>* days = nullptr;
  std::string calendar;
  const std::vector<double>* lat = nullptr;
  const std::vector<double>* lon = nullptr;
  const std::vector<uint8_t>* mask = nullptr;  // lat.size() x lon.size()
};

// A prediction this many times the largest observation of the store (every split, its recorded
// obs_range) is no amount a model of these observations predicts; and never less than
// kLargestPossible mm/day, above the largest daily total on record (1825 mm, La Reunion, 1966),
// so that a dry domain's stochastic draws are not refused. A factor 1e30 is an edit.
inline constexpr double kImpossibleOverObserved = 100;
inline constexpr double kLargestPossible = 2000;

// InputError naming `path`, `variable`, the date and the box (and the member, for values of
// several planes) of the first value over a modelled box that is not finite or lies outside
// [lo, hi] (`range`: what the bounds are, for the message). values: (days, lat, lon), any number
// of such planes (members one after another).
void check_scored_values(const std::string& path, const std::string& variable, const std::vector<float>& values,
                         const ScoredGrid& grid, double lo, double hi, const std::string& range);

// The smallest and largest finite value of `obs` (days x points) over the modelled points (mask
// 1); NaN both when there is none. Evaluate takes the store's recorded obs_range instead where it
// has one: a short or dry test split alone bounds too tightly.
struct ObservedRange {
  double lo = NAN, hi = NAN;
};
ObservedRange observed_range(const std::vector<float>& obs, const std::vector<uint8_t>& mask);

// The values a prediction of the predictand can take against the observed range `r`: for
// precipitation [0, max(kImpossibleOverObserved x r.hi, kLargestPossible)]; for any other
// predictand the range widened by its own width (at least 1) on each side (-30..40 degC
// observed: -100..110), which no model of those observations leaves; any finite value when
// nothing was observed. Sets `range` to the bounds as a message says them.
std::pair<double, double> possible_values(const ObservedRange& r, bool precipitation, const std::string& units,
                                          std::string& range);

}  // namespace ds
