#include "preprocess/target.h"

#include <cmath>

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

std::vector<uint8_t> land_mask(const std::vector<float>& pr, size_t npoints) {
  std::vector<uint8_t> mask(npoints, 1);
  for (size_t base = 0; base < pr.size(); base += npoints)
    for (size_t k = 0; k < npoints; ++k)
      if (!std::isfinite(pr[base + k])) mask[k] = 0;
  return mask;
}

std::vector<float> wet_day_target(const std::vector<float>& pr, const std::vector<uint8_t>& mask, double threshold) {
  const size_t np = mask.size();
  std::vector<float> y(pr.size(), 0.0f);
  for (size_t i = 0; i < pr.size(); ++i) {
    if (!mask[i % np]) continue;
    const double v = pr[i];
    y[i] = v >= threshold ? static_cast<float>(v - threshold) : 0.0f;
  }
  return y;
}

}  // namespace ds
