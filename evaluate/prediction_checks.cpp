#include "evaluate/prediction_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "io/calendar.h"
#include "io/error.h"

namespace ds {

void check_scored_values(const std::string& path, const std::string& variable, const std::vector<float>& values,
                         const ScoredGrid& grid, double lo, double hi, const std::string& range) {
  const size_t nx = grid.lon->size(), np = grid.lat->size() * nx, nt = grid.days->size();
  if (np == 0 || nt == 0) return;
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t k = i % np, t = (i / np) % nt;
    const float v = values[i];
    if (!(*grid.mask)[k] || (std::isfinite(v) && v >= lo && v <= hi)) continue;
    const std::string date = to_string(date_from_days((*grid.days)[t], parse_calendar(grid.calendar, path)));
    const std::string member = values.size() > nt * np ? fmt::format(" (member {})", i / (nt * np)) : "";
    throw InputError(fmt::format("{}: {}{} is {} on {} at lat {:g}, lon {:g} (a modelled box){}: not a value predict "
                                 "writes, or a model of these observations predicts (the file changed after "
                                 "predict?); predict again",
                                 path, variable, member, v, date, (*grid.lat)[k / nx], (*grid.lon)[k % nx],
                                 std::isfinite(v) ? ", outside " + range : ""));
  }
}

ObservedRange observed_range(const std::vector<float>& obs, const std::vector<uint8_t>& mask) {
  ObservedRange r;
  const size_t np = mask.size();
  for (size_t i = 0; i < obs.size(); ++i) {
    if (!mask[i % np] || !std::isfinite(obs[i])) continue;
    if (!(r.lo <= obs[i])) r.lo = obs[i];  // NaN at first
    if (!(r.hi >= obs[i])) r.hi = obs[i];
  }
  return r;
}

std::pair<double, double> possible_values(const ObservedRange& r, bool precipitation, const std::string& units,
                                          std::string& range) {
  double lo, hi;
  if (!std::isfinite(r.lo) || !std::isfinite(r.hi)) {  // nothing observed (preprocess refuses such a split)
    range = "any finite value";
    return {-INFINITY, INFINITY};
  }
  if (precipitation) {
    lo = 0, hi = std::max(kImpossibleOverObserved * r.hi, kLargestPossible);
    range = fmt::format("[0, {:g}] {} ({:g} times the largest observation, at least {:g})", hi, units,
                        kImpossibleOverObserved, kLargestPossible);
  } else {
    const double w = std::max(r.hi - r.lo, 1.0);  // a constant observation still leaves room
    lo = r.lo - w, hi = r.hi + w;
    range = fmt::format("[{:g}, {:g}] {} (the observed range widened by its width each side)", lo, hi, units);
  }
  return {lo, hi};
}

}  // namespace ds
