#include "preprocess/target.h"

#include <cmath>
#include <limits>

#include "io/error.h"

namespace ds {

void to_mm_per_day(std::vector<float>& pr, const std::string& units, const std::string& where) {
  double factor;
  if (units == "kg m-2 s-1" || units == "kg/m2/s" || units == "kg m**-2 s**-1") factor = kSecondsPerDay;
  else if (units == "mm/day" || units == "mm day-1" || units == "mm d-1" || units == "kg m-2 day-1") factor = 1.0;
  else throw InputError(where + ": precipitation units '" + units + "' are not kg m-2 s-1 or mm/day");
  if (factor != 1.0)
    for (auto& v : pr) v = static_cast<float>(v * factor);
}

void ObservedDays::add(const std::vector<float>& fields) {
  const size_t np = count_.size();
  for (size_t base = 0; base + np <= fields.size(); base += np, ++days_)
    for (size_t k = 0; k < np; ++k) count_[k] += std::isfinite(fields[base + k]) ? 1 : 0;
}

std::vector<uint8_t> ObservedDays::mask(double min_fraction) const {
  std::vector<uint8_t> m(count_.size(), 0);
  // Compared in counts, so a fraction of 1 means every day, exactly.
  const double need = min_fraction * static_cast<double>(days_);
  for (size_t k = 0; k < count_.size(); ++k) m[k] = count_[k] > 0 && static_cast<double>(count_[k]) >= need - 1e-9;
  return m;
}

std::vector<float> training_target(const std::vector<float>& obs, const std::vector<uint8_t>& mask, bool precipitation,
                                   double threshold) {
  const size_t np = mask.size();
  std::vector<float> y(obs.size(), std::numeric_limits<float>::quiet_NaN());
  for (size_t i = 0; i < obs.size(); ++i) {
    const float v = obs[i];
    if (!mask[i % np] || !std::isfinite(v)) continue;
    if (!precipitation) y[i] = v;
    else y[i] = v >= threshold ? static_cast<float>(double(v) - threshold) : 0.0f;
  }
  return y;
}

void mask_observation(std::vector<float>& obs, const std::vector<uint8_t>& mask) {
  const size_t np = mask.size();
  for (size_t i = 0; i < obs.size(); ++i)
    if (!mask[i % np]) obs[i] = std::numeric_limits<float>::quiet_NaN();
}

}  // namespace ds
