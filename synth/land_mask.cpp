#include "synth/land_mask.h"

#include <cmath>

namespace ds::synth {

namespace {
constexpr double kPi = 3.14159265358979323846;
}

bool is_land(double lon, double lat, const Config::Synth& region) {
  // Position in the region box, 0..1 west to east and south to north.
  const double u = (lon - region.lon_min) / (region.lon_max - region.lon_min);
  const double v = (lat - region.lat_min) / (region.lat_max - region.lat_min);
  // West coast: ocean west of a wavy line at ~17% of the width (bays and capes).
  const double west = 0.17 + 0.06 * std::sin(2 * kPi * 1.3 * v + 0.7) + 0.03 * std::sin(2 * kPi * 3.7 * v + 2.1);
  // South coast: ocean south of a wavy line at ~12% of the height, with a gulf-like bight.
  const double south = 0.12 + 0.06 * std::sin(2 * kPi * 1.6 * u + 1.1) + 0.025 * std::sin(2 * kPi * 4.3 * u);
  return u >= west && v >= south;
}

std::vector<uint8_t> land_mask(const Grid& grid, const Config::Synth& region) {
  std::vector<uint8_t> mask(grid.size());
  for (size_t i = 0; i < grid.lat.size(); ++i)
    for (size_t j = 0; j < grid.lon.size(); ++j)
      mask[i * grid.lon.size() + j] = is_land(grid.lon[j], grid.lat[i], region) ? 1 : 0;
  return mask;
}

}  // namespace ds::synth
