#include "synth/grid.h"

#include <cmath>

#include "io/calendar.h"

namespace ds::synth {

const char* const kTimeUnits = "days since 1979-01-01 00:00:00";

int64_t time_epoch_days() { return days_from_civil(Date{1979, 1, 1}); }

namespace {

// Values first + i*step inside [lo, hi], where the grid is offset + k*step. The small tolerance
// keeps a bound that is itself a grid value (lat_max = 48) inside despite rounding.
std::vector<double> points_inside(double lo, double hi, double step, double offset) {
  const double eps = 1e-9;
  const long first = static_cast<long>(std::ceil((lo - offset) / step - eps));
  const long last = static_cast<long>(std::floor((hi - offset) / step + eps));
  std::vector<double> v;
  for (long k = first; k <= last; ++k) v.push_back(offset + k * step);
  return v;
}

Grid make_grid(const Config::Synth& cfg, double step, double offset) {
  Grid g;
  g.lon = points_inside(cfg.lon_min, cfg.lon_max, step, offset);
  const auto lat = points_inside(cfg.lat_min, cfg.lat_max, step, offset);
  g.lat.assign(lat.rbegin(), lat.rend());  // north to south, as ERA-Interim and EWEMBI store it
  return g;
}

}  // namespace

Grid coarse_grid(const Config::Synth& cfg) { return make_grid(cfg, 2.0, 0.0); }
Grid fine_grid(const Config::Synth& cfg) { return make_grid(cfg, 0.5, 0.25); }

std::vector<int64_t> day_axis(const Config::Synth& cfg) {
  std::vector<int64_t> days;
  if (cfg.years.empty()) return days;
  const int64_t first = days_from_civil(Date{cfg.years.first, 1, 1});
  const int64_t end = days_from_civil(Date{cfg.years.last + 1, 1, 1});
  for (int64_t d = first; d < end; ++d) days.push_back(d);
  return days;
}

}  // namespace ds::synth
